package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

type previewRequest struct {
	URL *string `json:"url"`
}

type productJSON struct {
	Marketplace  models.Marketplace  `json:"marketplace"`
	Title        string              `json:"title"`
	ImageURL     string              `json:"image_url"`
	ProductURL   string              `json:"product_url"`
	Currency     string              `json:"currency"`
	Price        json.Number         `json:"price"`
	Availability models.Availability `json:"availability"`
}

func newProductJSON(p models.Product) productJSON {
	return productJSON{
		Marketplace: p.Marketplace, Title: p.Title, ImageURL: p.ImageURL, ProductURL: p.ProductURL,
		Currency: p.Currency, Price: money(p.Price, p.Currency), Availability: p.Availability,
	}
}

// previewProduct is POST /v1/products/preview.
func (s *Server) previewProduct(c *gin.Context) {
	var req previewRequest
	if err := decodeJSON(c, &req); err != nil {
		abort(c, err)
		return
	}
	if req.URL == nil || *req.URL == "" {
		abort(c, required("url"))
		return
	}
	ref, err := models.ParseProductURL(*req.URL)
	if err != nil {
		abort(c, err)
		return
	}
	p, err := s.product(c.Request.Context(), mustKey(c).Mode, ref)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"product": newProductJSON(p)})
}

// product looks a product up in the catalog of the key's mode and refuses
// anything not in stock: a product that cannot be bought is "unavailable"
// for every purpose of this API.
func (s *Server) product(ctx context.Context, mode models.Mode, ref models.ProductRef) (models.Product, error) {
	cat, ok := s.deps.Catalogs[mode]
	if !ok || cat == nil {
		return models.Product{}, models.ErrLiveUnavailable
	}
	p, err := cat.Product(ctx, ref)
	if err != nil {
		return models.Product{}, err
	}
	if p.Availability != models.InStock {
		return models.Product{}, models.ErrProductUnavailable
	}
	return p, nil
}
