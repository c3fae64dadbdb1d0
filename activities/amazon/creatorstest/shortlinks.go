package creatorstest

import (
	"net/http"
	"strings"

	"github.com/memocart/memocart/activities/upstream/upstreamtest"
	"github.com/memocart/memocart/models"
)

// Reserved short-link codes. See the package comment for what each
// answers.
const (
	CodeEvil      = "catEvil1"
	CodeIPLiteral = "catIPLit1"
	CodeLoop      = "catLoop1"
	CodeTwoHops   = "catTwoHop1"
	CodeNoHead    = "catNoHead1"
	CodeNotFound  = "catGone1"
	CodeDown      = "catDown01"
	CodeRelative  = "catRel01"
)

// The hosts reserved codes redirect to that no follower may contact.
const (
	EvilHost      = "evil.example"
	IPLiteralHost = "169.254.169.254"
)

// The ASINs in the forbidden redirects' URLs, well-formed so that only
// the host is wrong.
const (
	EvilASIN      = "B0CATEVIL1"
	IPLiteralASIN = "B0CATIPLT1"
)

// shortLinkHosts maps each short-link host to the storefront its codes
// lead to.
var shortLinkHosts = upstreamtest.ShortLinkStorefronts()

// ShortLinkASIN returns the ASIN an ordinary short-link code leads to:
// "B0" and eight characters derived from a hash of the code, which is
// case-sensitive. It never starts with B0CAT, so it is never reserved.
func ShortLinkASIN(code string) string {
	out := []byte(upstreamtest.InventedASIN("creatorstest shortlink:" + code))
	if strings.HasPrefix(string(out), "B0CAT") {
		out[4] = '0'
	}
	return string(out)
}

// ShortLinkTarget returns the product page an ordinary code on a
// short-link host redirects to, without its query.
func ShortLinkTarget(host, code string) string {
	return "https://" + shortLinkHosts[host] + "/dp/" + ShortLinkASIN(code)
}

// serveShortLink answers amzn.to/<code> and <host>/d/<code>.
func (s *Server) serveShortLink(w http.ResponseWriter, r *http.Request, host string) {
	rec := s.record(r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.answer(w, r, rec, http.StatusMethodNotAllowed, nil)
		return
	}
	code, ok := shortCode(host, r.URL.Path)
	if !ok {
		s.answer(w, r, rec, http.StatusNotFound, nil)
		return
	}
	redirect := func(status int, location string) {
		w.Header().Set("Location", location)
		s.answer(w, r, rec, status, nil)
	}
	status := http.StatusMovedPermanently
	if host == "a.co" {
		status = http.StatusFound
	}
	switch code {
	case CodeEvil:
		redirect(status, "https://"+EvilHost+"/dp/"+EvilASIN)
	case CodeIPLiteral:
		redirect(status, "https://"+IPLiteralHost+"/dp/"+IPLiteralASIN)
	case CodeLoop:
		redirect(status, "https://"+host+r.URL.Path)
	case CodeNotFound:
		s.answer(w, r, rec, http.StatusNotFound, nil)
	case CodeDown:
		s.answer(w, r, rec, http.StatusServiceUnavailable, nil)
	case CodeRelative:
		redirect(status, "https://"+shortLinkHosts[host]+"/exec/obidos/ASIN/"+ShortLinkASIN(code))
	case CodeNoHead:
		if r.Method == http.MethodHead {
			w.Header().Set("Allow", "GET")
			s.answer(w, r, rec, http.StatusMethodNotAllowed, nil)
			return
		}
		redirect(status, ShortLinkTarget(host, code)+"?ref_=creatorstest&th=1")
	case CodeTwoHops:
		if host == "a.co" {
			redirect(status, "https://amzn.to/"+code)
			return
		}
		redirect(status, ShortLinkTarget(host, code)+"?ref_=creatorstest&th=1")
	default:
		redirect(status, ShortLinkTarget(host, code)+"?ref_=creatorstest&th=1&psc=1")
	}
}

// shortCode reads the code from a short link's path: /<code> on amzn.to,
// /d/<code> elsewhere.
func shortCode(host, path string) (string, bool) {
	p := strings.TrimPrefix(path, "/")
	if host != "amzn.to" {
		var ok bool
		if p, ok = strings.CutPrefix(p, "d/"); !ok {
			return "", false
		}
	}
	if p == "" || strings.Contains(p, "/") {
		return "", false
	}
	return p, true
}

// serveStorefront answers a storefront's product pages.
func (s *Server) serveStorefront(w http.ResponseWriter, r *http.Request, host string) {
	rec := s.record(r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.answer(w, r, rec, http.StatusMethodNotAllowed, nil)
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "dp" && models.IsASIN(segs[1]):
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		s.answer(w, r, rec, http.StatusOK, nil)
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("<!doctype html><title>" + Title(segs[1]) + "</title><h1>" + Title(segs[1]) +
				"</h1><p>A product page of the creatorstest server (" + host + ").</p>"))
		}
	case len(segs) == 3 && segs[0] == "gp" && segs[1] == "product" && models.IsASIN(segs[2]):
		w.Header().Set("Location", "/dp/"+segs[2])
		s.answer(w, r, rec, http.StatusMovedPermanently, nil)
	case len(segs) == 4 && segs[0] == "exec" && segs[1] == "obidos" && segs[2] == "ASIN" && models.IsASIN(segs[3]):
		w.Header().Set("Location", "/dp/"+segs[3])
		s.answer(w, r, rec, http.StatusMovedPermanently, nil)
	default:
		s.answer(w, r, rec, http.StatusNotFound, nil)
	}
}

// serveForbidden answers the hosts no follower may reach, so that one that
// does gets somewhere and is recorded.
func (s *Server) serveForbidden(w http.ResponseWriter, r *http.Request) {
	rec := s.record(r)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	s.answer(w, r, rec, http.StatusOK, nil)
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte("creatorstest: a client followed a redirect it should have refused\n"))
	}
}
