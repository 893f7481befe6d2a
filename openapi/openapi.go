// Package openapi holds the OpenAPI 3.1 document of the ams API,
// openapi.json, which is written by hand and embedded in the binary to be
// served at GET /v1/openapi.json.
//
// The tests of this package validate the document and check it against the
// domain records of package ams; a test in package http checks it against
// the server's routes and the permissions they enforce.
package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

// Document is the OpenAPI 3.1 document of the API (openapi.json).
//
//go:embed openapi.json
var Document []byte

// methods are the fields of an OpenAPI 3.1 Path Item that hold operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Operations returns every operation of Document, keyed "METHOD /path" with
// the method in upper case and the path as the document writes it (e.g.
// "GET /v1/assistants/{id}"), mapped to its operationId. It fails if the
// document does not parse or an operation has no operationId.
//
// It reads the JSON with encoding/json only, so that the binary does not
// depend on an OpenAPI library; the document uses no Path Item $ref, which
// this function would not follow.
func Operations() (map[string]string, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(Document, &doc); err != nil {
		return nil, fmt.Errorf("parse openapi.json: %w", err)
	}
	ops := make(map[string]string)
	for path, item := range doc.Paths {
		for _, m := range methods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			key := strings.ToUpper(m) + " " + path
			var op struct {
				OperationID string `json:"operationId"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("parse openapi.json operation %s: %w", key, err)
			}
			if op.OperationID == "" {
				return nil, fmt.Errorf("openapi.json: operation %s has no operationId", key)
			}
			ops[key] = op.OperationID
		}
	}
	return ops, nil
}

// defaultServer is the server entry of openapi.json, written for `ams
// serve` with its default address; ForServer replaces it.
const defaultServer = `"url": "http://127.0.0.1:8080",
      "description": "` + "`ams serve` with its default `--addr`." + `"`

// ForServer returns Document with its one server entry naming baseURL
// (the service's public URL, `ams serve --base-url`), so that the document
// a server serves names that server: clients generated from it, and tools
// that try requests from it, call it rather than 127.0.0.1:8080. The rest
// of the document is Document's bytes unchanged.
func ForServer(baseURL string) ([]byte, error) {
	if !strings.Contains(string(Document), defaultServer) {
		return nil, fmt.Errorf("openapi.json: the default server entry is not where ForServer expects it")
	}
	url, err := json.Marshal(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, err
	}
	entry := `"url": ` + string(url) + `,
      "description": "This server (its ` + "`--base-url`" + `)."`
	return []byte(strings.Replace(string(Document), defaultServer, entry, 1)), nil
}
