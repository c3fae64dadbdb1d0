package api

import (
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
	p, err := s.deps.Carts.Product(c.Request.Context(), mustKey(c).Mode, ref)
	if err != nil {
		abort(c, err)
		return
	}
	render(c, http.StatusOK, gin.H{"product": newProductJSON(p)})
}
