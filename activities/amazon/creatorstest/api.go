package creatorstest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxItemIDs is how many ids one getItems call may name.
const maxItemIDs = 10

// resources are the getItems resources the API documents; any other name
// is refused, as the API does, so a client's typo shows.
var resources = map[string]bool{
	"browseNodeInfo.browseNodes": true, "browseNodeInfo.browseNodes.ancestor": true,
	"browseNodeInfo.browseNodes.salesRank": true, "browseNodeInfo.websiteSalesRank": true,
	"customerReviews.count": true, "customerReviews.starRating": true,
	"images.primary.small": true, "images.primary.medium": true, "images.primary.large": true,
	"images.primary.highRes": true, "images.variants.small": true, "images.variants.medium": true,
	"images.variants.large": true, "images.variants.highRes": true,
	"itemInfo.byLineInfo": true, "itemInfo.classifications": true, "itemInfo.contentInfo": true,
	"itemInfo.contentRating": true, "itemInfo.externalIds": true, "itemInfo.features": true,
	"itemInfo.manufactureInfo": true, "itemInfo.productInfo": true, "itemInfo.technicalInfo": true,
	"itemInfo.title": true, "itemInfo.tradeInInfo": true,
	"offersV2.listings.availability": true, "offersV2.listings.condition": true,
	"offersV2.listings.dealDetails": true, "offersV2.listings.isBuyBoxWinner": true,
	"offersV2.listings.loyaltyPoints": true, "offersV2.listings.merchantInfo": true,
	"offersV2.listings.price": true, "offersV2.listings.type": true,
	"parentASIN": true,
}

// serveToken is the OAuth client-credentials grant.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	rec := s.record(r)
	oauthError := func(status int, code, description string) {
		s.answer(w, r, rec, status, mustJSON(map[string]string{"error": code, "error_description": description}))
	}
	if r.Method != http.MethodPost {
		oauthError(http.StatusMethodNotAllowed, "invalid_request", "The token endpoint accepts POST only.")
		return
	}
	s.mu.Lock()
	failStatus := 0
	if s.tokenFailN > 0 {
		s.tokenFailN--
		failStatus = s.tokenFailCode
	}
	s.mu.Unlock()
	if failStatus != 0 {
		oauthError(failStatus, "server_error", "Injected failure.")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(http.StatusBadRequest, "invalid_request", "The request body is not a form.")
		return
	}
	if !s.knownClient(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="creatorstest"`)
		oauthError(http.StatusUnauthorized, "invalid_client", "Client authentication failed.")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(http.StatusBadRequest, "unsupported_grant_type", "Only client_credentials is supported.")
		return
	}
	if sc := r.PostForm.Get("scope"); sc != Scope {
		oauthError(http.StatusBadRequest, "invalid_scope", "The requested scope is invalid.")
		return
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	token := "Atc|creatorstest|" + hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[token] = time.Now().Add(tokenLifetime)
	s.issued++
	s.mu.Unlock()
	s.answer(w, r, rec, http.StatusOK, mustJSON(map[string]any{
		"access_token": token,
		"token_type":   "bearer",
		"expires_in":   int(tokenLifetime / time.Second),
	}))
}

// knownClient reports whether a token request carries accepted HTTP Basic
// client credentials.
func (s *Server) knownClient(r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if !ok {
		return false
	}
	for _, c := range s.creds {
		if subtle.ConstantTimeCompare([]byte(id), []byte(c.id)) == 1 &&
			subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1 {
			return true
		}
	}
	return false
}

// getItemsRequest is getItems' documented body.
type getItemsRequest struct {
	ItemIDs    []string `json:"itemIds"`
	ItemIDType string   `json:"itemIdType"`
	PartnerTag string   `json:"partnerTag"`
	Resources  []string `json:"resources"`
}

func (s *Server) serveGetItems(w http.ResponseWriter, r *http.Request) {
	rec := s.record(r)
	marketplace := r.Header.Get("x-marketplace")
	s.mu.Lock()
	rec.Marketplace = marketplace
	var failStatus int
	var retryAfter time.Duration
	switch {
	case s.rateN > 0:
		s.rateN--
		failStatus, retryAfter = http.StatusTooManyRequests, s.retryAfter
	case s.failN > 0:
		s.failN--
		failStatus = s.failStatus
	}
	latency := s.latency
	s.mu.Unlock()

	fail := func(status int, code, message string) {
		s.answer(w, r, rec, status, errorsBody(code, message))
	}
	if failStatus == http.StatusTooManyRequests {
		if retryAfter > 0 {
			secs := (retryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
		}
		fail(failStatus, "TooManyRequests", "The request was denied due to request throttling.")
		return
	}
	if failStatus != 0 {
		fail(failStatus, injectedCode(failStatus), "Injected failure.")
		return
	}
	if !s.wait(r, latency) {
		return
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "getItems accepts POST only.")
		return
	}
	if !s.validToken(r.Header.Get("Authorization")) {
		fail(http.StatusUnauthorized, "Unauthorized", "The access token is missing, malformed or expired.")
		return
	}
	bare, ok := strings.CutPrefix(strings.ToLower(marketplace), "www.")
	if !ok || storefronts[bare] == "" {
		fail(http.StatusBadRequest, "InvalidParameterValue", "The value provided in the x-marketplace header is invalid.")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		fail(http.StatusBadRequest, "InvalidParameterValue", "The request body must be application/json.")
		return
	}
	var req getItemsRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "InvalidParameterValue", "The request body is not valid JSON.")
		return
	}
	s.mu.Lock()
	rec.ItemIDs = append([]string(nil), req.ItemIDs...)
	s.mu.Unlock()
	switch {
	case len(req.ItemIDs) == 0:
		fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter itemIds.")
		return
	case len(req.ItemIDs) > maxItemIDs:
		fail(http.StatusBadRequest, "InvalidParameterValue", "itemIds may contain at most 10 ids.")
		return
	case req.ItemIDType != "ASIN":
		fail(http.StatusBadRequest, "InvalidParameterValue", "The value provided for itemIdType is invalid.")
		return
	case req.PartnerTag == "":
		fail(http.StatusBadRequest, "MissingParameter", "The request must contain the parameter partnerTag.")
		return
	}
	want := map[string]bool{}
	for _, res := range req.Resources {
		if !resources[res] {
			fail(http.StatusBadRequest, "InvalidParameterValue",
				fmt.Sprintf("The value [%s] provided in the request for resources is invalid.", res))
			return
		}
		want[res] = true
	}

	var (
		items []itemJSON
		errs  []errorJSON
		delay time.Duration
	)
	s.mu.Lock()
	for _, id := range req.ItemIDs {
		if !isASIN(id) {
			errs = append(errs, errorJSON{Code: "InvalidParameterValue",
				Message: fmt.Sprintf("The ItemId %s provided in the request is invalid.", id)})
			continue
		}
		it, ok := s.items[id]
		if !ok {
			it, _ = magicItem(id, bare)
		}
		if id == SlowASIN {
			delay = max(delay, s.slowDelay)
		}
		delay = max(delay, it.Delay)
		if it.NotFound {
			errs = append(errs, errorJSON{Code: "ItemNotAccessible",
				Message: fmt.Sprintf("The ItemId %s is not accessible through the Creators API.", id)})
			continue
		}
		items = append(items, render(id, bare, req.PartnerTag, resolved(id, bare, it), want))
	}
	s.mu.Unlock()
	if !s.wait(r, delay) {
		return
	}
	resp := getItemsResponse{Errors: errs}
	if len(items) > 0 {
		resp.ItemsResult = &itemsResult{Items: items}
	}
	out, err := json.Marshal(resp)
	if err != nil {
		// A Listing.Price that is not a JSON number: a mistake in the
		// test that set it, made loud.
		fail(http.StatusInternalServerError, "InternalFailure", "creatorstest: a Listing.Price is not a JSON number")
		return
	}
	s.answer(w, r, rec, http.StatusOK, out)
}

// validToken reports whether an Authorization header bears a live token.
func (s *Server) validToken(header string) bool {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[token]
	return ok && time.Now().Before(exp)
}

// injectedCode is the error code FailNext's answers carry.
func injectedCode(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "InvalidParameterValue"
	case status == http.StatusUnauthorized:
		return "Unauthorized"
	case status == http.StatusForbidden:
		return "AccessDenied"
	case status == http.StatusNotFound:
		return "NotFound"
	case status == http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case status >= 500:
		return "InternalFailure"
	}
	return "RequestFailed"
}

// The response's documented shape. Every part of an item is a pointer, so
// that only the resources asked for are served.
type (
	getItemsResponse struct {
		Errors      []errorJSON  `json:"errors,omitempty"`
		ItemsResult *itemsResult `json:"itemsResult,omitempty"`
	}
	errorJSON struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	itemsResult struct {
		Items []itemJSON `json:"items"`
	}
	itemJSON struct {
		ASIN          string        `json:"asin"`
		DetailPageURL string        `json:"detailPageURL"`
		Images        *imagesJSON   `json:"images,omitempty"`
		ItemInfo      *itemInfoJSON `json:"itemInfo,omitempty"`
		OffersV2      *offersV2JSON `json:"offersV2,omitempty"`
	}
	imagesJSON struct {
		Primary struct {
			Large *imageJSON `json:"large,omitempty"`
		} `json:"primary"`
	}
	imageJSON struct {
		URL    string `json:"url"`
		Height int    `json:"height"`
		Width  int    `json:"width"`
	}
	itemInfoJSON struct {
		Title *displayValue `json:"title,omitempty"`
	}
	displayValue struct {
		DisplayValue string `json:"displayValue"`
		Label        string `json:"label"`
		Locale       string `json:"locale"`
	}
	offersV2JSON struct {
		Listings []listingJSON `json:"listings"`
	}
	listingJSON struct {
		Availability   *availabilityJSON `json:"availability,omitempty"`
		Condition      *conditionJSON    `json:"condition,omitempty"`
		IsBuyBoxWinner *bool             `json:"isBuyBoxWinner,omitempty"`
		MerchantInfo   *merchantJSON     `json:"merchantInfo,omitempty"`
		Price          *priceJSON        `json:"price,omitempty"`
	}
	availabilityJSON struct {
		Type             string `json:"type"`
		Message          string `json:"message,omitempty"`
		MinOrderQuantity int    `json:"minOrderQuantity,omitempty"`
		MaxOrderQuantity int    `json:"maxOrderQuantity,omitempty"`
	}
	conditionJSON struct {
		Value        string `json:"value"`
		SubCondition string `json:"subCondition"`
	}
	merchantJSON struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	priceJSON struct {
		Money moneyJSON `json:"money"`
	}
	moneyJSON struct {
		Amount        json.Number `json:"amount"`
		Currency      string      `json:"currency"`
		DisplayAmount string      `json:"displayAmount"`
	}
)

// render serves an item with the resources asked for.
func render(asin, bare, partnerTag string, it Item, want map[string]bool) itemJSON {
	out := itemJSON{
		ASIN: asin,
		DetailPageURL: "https://www." + bare + "/dp/" + asin + "?tag=" + partnerTag +
			"&linkCode=ogi&th=1&psc=1",
	}
	if want["images.primary.large"] && it.ImageURL != "" {
		out.Images = &imagesJSON{}
		out.Images.Primary.Large = &imageJSON{URL: it.ImageURL, Height: 500, Width: 500}
	}
	if want["itemInfo.title"] {
		out.ItemInfo = &itemInfoJSON{Title: &displayValue{DisplayValue: it.Title, Label: "Title", Locale: "en_US"}}
	}
	listingResources := want["offersV2.listings.availability"] || want["offersV2.listings.condition"] ||
		want["offersV2.listings.isBuyBoxWinner"] || want["offersV2.listings.merchantInfo"] ||
		want["offersV2.listings.price"]
	if it.NoOffers || !listingResources {
		return out
	}
	out.OffersV2 = &offersV2JSON{Listings: []listingJSON{}}
	for _, l := range it.Listings {
		var lj listingJSON
		if want["offersV2.listings.availability"] {
			lj.Availability = &availabilityJSON{Type: l.Availability, Message: availabilityMessages[l.Availability]}
			if strings.HasPrefix(l.Availability, "IN_STOCK") {
				lj.Availability.MinOrderQuantity, lj.Availability.MaxOrderQuantity = 1, 30
			}
		}
		if want["offersV2.listings.condition"] {
			lj.Condition = &conditionJSON{Value: l.Condition, SubCondition: "Unknown"}
		}
		if want["offersV2.listings.isBuyBoxWinner"] {
			winner := l.BuyBoxWinner
			lj.IsBuyBoxWinner = &winner
		}
		if want["offersV2.listings.merchantInfo"] {
			lj.MerchantInfo = &merchantJSON{ID: l.MerchantID, Name: l.MerchantName}
		}
		if want["offersV2.listings.price"] && l.Price != "" {
			lj.Price = &priceJSON{Money: moneyJSON{Amount: json.Number(l.Price), Currency: l.Currency,
				DisplayAmount: displayAmount(l.Price, l.Currency)}}
		}
		out.OffersV2.Listings = append(out.OffersV2.Listings, lj)
	}
	return out
}

// errorsBody is the API's error list with one error.
func errorsBody(code, message string) []byte {
	return mustJSON(getItemsResponse{Errors: []errorJSON{{Code: code, Message: message}}})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("creatorstest: encoding a response: %v", err)) // fixed shapes only
	}
	return b
}
