package upstreamtest

import (
	"io"
	"net/http"
	"sync"
)

// Answer is one answer a Script gives: its status, headers and body.
type Answer struct {
	Status int
	Header http.Header
	Body   string
}

// Script is an upstream for a client's tests: it grants every request to
// TokenPath with the token body Token, and answers every other request
// with Answers in turn, then with Served (200). Every body is sent as
// ContentType. Safe for concurrent use once serving.
type Script struct {
	TokenPath   string
	Token       string
	ContentType string
	Answers     []Answer
	Served      string

	mu     sync.Mutex
	calls  int
	tokens int
}

func (s *Script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", s.ContentType)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path == s.TokenPath {
		s.tokens++
		_, _ = io.WriteString(w, s.Token)
		return
	}
	s.calls++
	a := Answer{Status: http.StatusOK, Body: s.Served}
	if len(s.Answers) > 0 {
		a, s.Answers = s.Answers[0], s.Answers[1:]
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// Counts returns how many requests other than token requests it answered
// (calls) and how many token requests it granted (tokens).
func (s *Script) Counts() (calls, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.tokens
}
