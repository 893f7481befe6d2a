// Command bare is the baseline of the load benchmark: a bare net/http
// handler that answers GET /v1/messages/{id} with a fixed Message record of
// the same shape and size as ams's, with no authentication, rate limiting
// or storage. docs/benchmarks.md compares ams's throughput to it.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	flag.Parse()
	now := time.Now().UTC().Truncate(time.Millisecond)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/messages/{id}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := json.Marshal(map[string]any{
			"id": r.PathValue("id"), "object": "message", "assistant_id": "ast_0123456789ABCDEFGHIJKLMN",
			"conversation_id": "conv_0123456789ABCDEFGHIJKLMN", "direction": "outbound",
			"content":    "Hello! I am the built-in assistant. I can chat, keep the context of our conversation and remember what you tell me.",
			"created_at": now, "updated_at": now,
		})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})
	log.Fatal((&http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}).ListenAndServe())
}
