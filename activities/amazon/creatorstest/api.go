package creatorstest

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memocart/memocart/models"
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

// The token endpoints' answers.
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	Scope       string `json:"scope,omitempty"` // Login with Amazon only
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
}

// serveToken is Login with Amazon's client-credentials grant, for version
// 3.x credentials: a JSON body {grant_type, client_id, client_secret,
// scope}, as Amazon's Creators SDK sends it. A form body, HTTP Basic or
// an unknown field is refused: none is documented for these credentials.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	rec, oauthError, ok := s.tokenPreamble(w, r, "application/json",
		"The token request must be a JSON body (Content-Type: application/json).")
	if !ok {
		return
	}
	if r.Header.Get("Authorization") != "" {
		oauthError(http.StatusBadRequest, "invalid_request", "Client credentials go in the JSON body, not in an Authorization header.")
		return
	}
	var req struct {
		GrantType    string `json:"grant_type"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Scope        string `json:"scope"`
	}
	if err := decodeStrict(r.Body, &req); err != nil {
		oauthError(http.StatusBadRequest, "invalid_request", "The request body is not the token request's JSON object.")
		return
	}
	if !s.knownClient(req.ClientID, req.ClientSecret) {
		oauthError(http.StatusUnauthorized, "invalid_client", "Client authentication failed.")
		return
	}
	if req.GrantType != "client_credentials" {
		oauthError(http.StatusBadRequest, "unsupported_grant_type", "Only client_credentials is supported.")
		return
	}
	if req.Scope != Scope {
		oauthError(http.StatusBadRequest, "invalid_scope", "The requested scope is invalid.")
		return
	}
	s.answer(w, r, rec, http.StatusOK, mustJSON(tokenAnswer{
		AccessToken: s.issueToken(), Scope: Scope, TokenType: "bearer", ExpiresIn: int(tokenLifetime / time.Second),
	}))
}

// serveCognitoToken is Cognito's client-credentials grant, for version
// 2.x credentials: a form body with grant_type and scope
// creatorsapi/default, the credentials as HTTP Basic or in the form (one
// way only). Cognito answers its errors with 400.
func (s *Server) serveCognitoToken(w http.ResponseWriter, r *http.Request) {
	rec, oauthError, ok := s.tokenPreamble(w, r, "application/x-www-form-urlencoded",
		"The token request must be a form (application/x-www-form-urlencoded).")
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(http.StatusBadRequest, "invalid_request", "The request body is not a form.")
		return
	}
	for k := range r.PostForm {
		switch k {
		case "grant_type", "scope", "client_id", "client_secret":
		default:
			oauthError(http.StatusBadRequest, "invalid_request", "Unknown parameter "+k+".")
			return
		}
	}
	id, secret, basic := r.BasicAuth()
	inForm := r.PostForm.Has("client_id") || r.PostForm.Has("client_secret")
	switch {
	case basic && inForm:
		oauthError(http.StatusBadRequest, "invalid_request", "Client credentials sent two ways.")
		return
	case !basic:
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if !s.knownClient(id, secret) {
		oauthError(http.StatusBadRequest, "invalid_client", "Client authentication failed.")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(http.StatusBadRequest, "unsupported_grant_type", "Only client_credentials is supported.")
		return
	}
	if sc := r.PostForm.Get("scope"); sc != CognitoScope {
		oauthError(http.StatusBadRequest, "invalid_scope", "The requested scope is invalid.")
		return
	}
	s.answer(w, r, rec, http.StatusOK, mustJSON(tokenAnswer{
		AccessToken: s.issueToken(), TokenType: "Bearer", ExpiresIn: int(tokenLifetime / time.Second),
	}))
}

// oauthError returns the writer of a token endpoint's OAuth error body.
func (s *Server) oauthError(w http.ResponseWriter, r *http.Request, rec *Request) func(status int, code, description string) {
	return func(status int, code, description string) {
		s.answer(w, r, rec, status, mustJSON(map[string]string{"error": code, "error_description": description}))
	}
}

// tokenPreamble records a token request and refuses what both token
// endpoints refuse first, in order: another method, injected failures,
// and a body that is not mediaType (answered wrongType). It returns the
// request's record, its OAuth error writer, and whether to go on.
func (s *Server) tokenPreamble(w http.ResponseWriter, r *http.Request, mediaType, wrongType string) (*Request, func(int, string, string), bool) {
	rec := s.record(r)
	oauthError := s.oauthError(w, r, rec)
	if r.Method != http.MethodPost {
		oauthError(http.StatusMethodNotAllowed, "invalid_request", "The token endpoint accepts POST only.")
		return rec, oauthError, false
	}
	if failStatus := s.tokenFaults.Take().Status; failStatus != 0 {
		oauthError(failStatus, "server_error", "Injected failure.")
		return rec, oauthError, false
	}
	if !isMediaType(r.Header.Get("Content-Type"), mediaType) {
		oauthError(http.StatusBadRequest, "invalid_request", wrongType)
		return rec, oauthError, false
	}
	return rec, oauthError, true
}

// issueToken grants a new access token.
func (s *Server) issueToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	token := "Atc|creatorstest|" + hex.EncodeToString(b)
	s.tokens.Grant(token, time.Now().Add(tokenLifetime))
	return token
}

// knownClient reports whether id and secret are accepted credentials.
func (s *Server) knownClient(id, secret string) bool {
	if id == "" || secret == "" {
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

// isMediaType reports whether a Content-Type header names want, with no
// charset other than UTF-8.
func isMediaType(header, want string) bool {
	mt, params, err := mime.ParseMediaType(header)
	if err != nil || mt != want {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// unknownFieldError names a body field the API does not have.
type unknownFieldError struct{ name string }

func (e *unknownFieldError) Error() string { return "unknown field " + strconv.Quote(e.name) }

// decodeStrict decodes one JSON object into v (a pointer to a struct),
// refusing trailing data and any field that is not one of v's JSON names
// spelled exactly: the API's names are case-sensitive lowerCamelCase,
// while encoding/json alone would take "ItemIds" (PA-API 5's spelling)
// for "itemIds". An unknown field is an *unknownFieldError.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, 1<<16))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	known := jsonNames(reflect.TypeOf(v).Elem())
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !known[name] {
			return &unknownFieldError{name}
		}
	}
	return json.Unmarshal(raw, v)
}

// jsonNames returns the JSON names of struct type t's fields.
func jsonNames(t reflect.Type) map[string]bool {
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
	return names
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
	fault := s.Take()
	s.mu.Lock()
	rec.Marketplace = marketplace
	container := s.container
	s.mu.Unlock()

	fail := func(status int, e errorBody) {
		s.answer(w, r, rec, status, mustJSON(e))
	}
	invalid := func(field, message string) {
		fail(http.StatusBadRequest, errorBody{Type: "ValidationException", Message: message,
			Reason: "FieldValidationFailed", FieldList: []string{field}})
	}
	if fault.Status == http.StatusTooManyRequests {
		e := errorBody{Type: "ThrottleException",
			Message: "The request was denied due to request throttling. Please verify the number of requests made per second."}
		if fault.RetryAfter > 0 {
			secs := fault.RetryAfterSeconds()
			e.RetryAfterSeconds = &secs
		}
		fail(fault.Status, e)
		return
	}
	if fault.Status != 0 {
		fail(fault.Status, injectedError(fault.Status))
		return
	}
	if !s.wait(r, fault.Latency) {
		return
	}
	if r.Method != http.MethodPost {
		fail(http.StatusMethodNotAllowed, errorBody{Type: "MethodNotAllowedException", Message: "getItems accepts POST only."})
		return
	}
	if e, ok := s.checkToken(r.Header.Get("Authorization")); !ok {
		fail(http.StatusUnauthorized, e)
		return
	}
	bare, ok := strings.CutPrefix(strings.ToLower(marketplace), "www.")
	if !ok || storefronts[bare] == "" {
		invalid("x-marketplace", "The value provided in the x-marketplace header is invalid.")
		return
	}
	if !isMediaType(r.Header.Get("Content-Type"), "application/json") {
		invalid("Content-Type", "The request body must be application/json.")
		return
	}
	var req getItemsRequest
	if err := decodeStrict(r.Body, &req); err != nil {
		field := "body"
		var unknown *unknownFieldError
		if errors.As(err, &unknown) {
			field = unknown.name
		}
		invalid(field, "The request body is not getItems' JSON object.")
		return
	}
	s.mu.Lock()
	rec.ItemIDs = append([]string(nil), req.ItemIDs...)
	s.mu.Unlock()
	switch {
	case len(req.ItemIDs) == 0:
		invalid("itemIds", "The request must contain the parameter itemIds.")
		return
	case len(req.ItemIDs) > maxItemIDs:
		invalid("itemIds", "itemIds may contain at most 10 ids.")
		return
	case req.ItemIDType != "ASIN":
		invalid("itemIdType", "The value provided for itemIdType is invalid.")
		return
	case req.PartnerTag == "":
		invalid("partnerTag", "The request must contain the parameter partnerTag.")
		return
	}
	want := map[string]bool{}
	for _, res := range req.Resources {
		if !resources[res] {
			invalid("resources", fmt.Sprintf("The value [%s] provided in the request for resources is invalid.", res))
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
		if !models.IsASIN(id) {
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
	if len(items) == 0 {
		// No requested item is accessible: the whole call is a 404.
		fail(http.StatusNotFound, errorBody{Type: "ResourceNotFoundException",
			Message: "No items found for the requested item IDs.", ResourceType: "Item", ResourceID: req.ItemIDs[0]})
		return
	}
	resp := getItemsResponse{Errors: errs}
	if container == ItemResults {
		resp.ItemResults = &itemsResult{Items: items}
	} else {
		resp.ItemsResult = &itemsResult{Items: items}
	}
	out, err := json.Marshal(resp)
	if err != nil {
		// A Listing.Price that is not a JSON number: a mistake in the
		// test that set it, made loud.
		fail(http.StatusInternalServerError, errorBody{Type: "InternalServerException",
			Message: "creatorstest: a Listing.Price is not a JSON number"})
		return
	}
	s.answer(w, r, rec, http.StatusOK, out)
}

// checkToken checks an Authorization header: a live token, as "Bearer
// <token>". It returns the 401 body otherwise.
func (s *Server) checkToken(header string) (errorBody, bool) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || token == "" {
		return errorBody{Type: "UnauthorizedException", Message: "The Authorization header must be Bearer <access token>.",
			Reason: "InvalidToken"}, false
	}
	known, live := s.tokens.Check(token, time.Now())
	switch {
	case !known:
		return errorBody{Type: "UnauthorizedException", Message: "The access token is invalid.", Reason: "InvalidToken"}, false
	case !live:
		return errorBody{Type: "UnauthorizedException", Message: "Authentication token has expired.", Reason: "TokenExpired"}, false
	}
	return errorBody{}, true
}

// injectedError is the body FailNext's answers carry: the documented one
// for 400, 401, 403 and 404, a made-up one of the same shape otherwise.
func injectedError(status int) errorBody {
	switch {
	case status == http.StatusBadRequest:
		return errorBody{Type: "ValidationException", Message: "Request validation failed.",
			Reason: "FieldValidationFailed", FieldList: []string{"partnerTag"}}
	case status == http.StatusUnauthorized:
		return errorBody{Type: "UnauthorizedException", Message: "Authentication token has expired.", Reason: "TokenExpired"}
	case status == http.StatusForbidden:
		return errorBody{Type: "AccessDeniedException",
			Message: "Your account does not currently meet the eligibility requirements.", Reason: "AssociateNotEligible"}
	case status == http.StatusNotFound:
		return errorBody{Type: "ResourceNotFoundException", Message: "No items found for the requested item IDs.",
			ResourceType: "Item"}
	case status == http.StatusServiceUnavailable:
		return errorBody{Type: "ServiceUnavailableException", Message: "Injected failure."}
	case status >= 500:
		return errorBody{Type: "InternalServerException", Message: "Injected failure."}
	}
	return errorBody{Type: "RequestFailedException", Message: "Injected failure."}
}

// The response's documented shape. Every part of an item is a pointer, so
// that only the resources asked for are served.
type (
	getItemsResponse struct {
		Errors      []errorJSON  `json:"errors,omitempty"`
		ItemsResult *itemsResult `json:"itemsResult,omitempty"`
		ItemResults *itemsResult `json:"itemResults,omitempty"`
	}
	// errorBody is the top-level body of a failed call.
	errorBody struct {
		Type              string   `json:"type"`
		Message           string   `json:"message"`
		Reason            string   `json:"reason,omitempty"`
		FieldList         []string `json:"fieldList,omitempty"`
		ResourceType      string   `json:"resourceType,omitempty"`
		ResourceID        string   `json:"resourceId,omitempty"`
		RetryAfterSeconds *int     `json:"retryAfterSeconds,omitempty"`
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
		DealDetails    *dealJSON         `json:"dealDetails,omitempty"`
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
	dealJSON struct {
		AccessType string `json:"accessType"`
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
		want["offersV2.listings.price"] || want["offersV2.listings.dealDetails"]
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
		if want["offersV2.listings.dealDetails"] && l.DealAccessType != "" {
			lj.DealDetails = &dealJSON{AccessType: l.DealAccessType}
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

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("creatorstest: encoding a response: %v", err)) // fixed shapes only
	}
	return b
}
