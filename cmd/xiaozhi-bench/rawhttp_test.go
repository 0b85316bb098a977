package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestRawClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer t" {
			w.WriteHeader(401)
			return
		}
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // forces chunked encoding
			io.WriteString(w, "part one, ")
			w.(http.Flusher).Flush()
			w.Write(b)
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	rc := newRawClient(host, 2)
	defer rc.close()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			path := "/echo"
			if i%2 == 1 {
				path = "/chunked"
			}
			status, body, err := rc.do(context.Background(), postRequest(host, path, "Bearer t", []byte(`{"n":1}`)))
			want := `{"n":1}`
			if path == "/chunked" {
				want = "part one, " + want
			}
			if err != nil || status != 200 || string(body) != want {
				t.Errorf("%s: %d %q %v", path, status, body, err)
			}
		})
	}
	wg.Wait()
	if status, _, err := rc.do(context.Background(), postRequest(host, "/echo", "Bearer wrong", nil)); err != nil || status != 401 {
		t.Errorf("unauthorized: %d %v", status, err)
	}
	if rc.open > 2 {
		t.Errorf("%d connections open, at most 2 allowed", rc.open)
	}
	rc.close()
	if rc.open != 0 {
		t.Errorf("%d connections counted open after close", rc.open)
	}
	if status, _, err := rc.do(context.Background(), postRequest(host, "/echo", "Bearer t", nil)); err != nil || status != 200 {
		t.Errorf("after close: %d %v", status, err)
	}
}
