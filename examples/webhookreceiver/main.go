// Command webhookreceiver receives walletgate's signed webhooks and prints
// one line per delivery: id, type, timestamp and data.
//
//	go run ./examples/webhookreceiver -addr 127.0.0.1:8081 -key sender.pem
//
// -key is the sender's public key as an SPKI PEM (what
// webhooksig.Signer.PublicKeyPEM returns). Point the sender at this program:
//
//	go run ./examples/server -webhook-url http://127.0.0.1:8081/ -webhook-public-key sender.pem
//
// Every request is checked with webhooksig.Verifier (signature, envelope, the
// default freshness window, the X-Grid-Webhook-Id header); a refused one is answered with the
// status the check names (400, 401 or 413) and its reason. An id seen
// before is answered 409, which the sender counts as delivered; the ids are
// kept in memory only, so they are forgotten on exit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/walletgate/walletgate/apierror/webhooksig"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "address to listen on")
	keyPath := flag.String("key", "", "path to the sender's public key (SPKI PEM)")
	flag.Parse()
	pemBytes, err := os.ReadFile(*keyPath)
	if err != nil {
		log.Fatalf("webhookreceiver: -key: %v", err)
	}
	v, err := webhooksig.NewVerifierPEM(pemBytes, webhooksig.VerifierConfig{})
	if err != nil {
		log.Fatalf("webhookreceiver: %v", err)
	}
	srv := &http.Server{Addr: *addr, Handler: handler(v, os.Stdout), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	log.Printf("webhookreceiver: listening on http://%s/", *addr)
	log.Fatal(srv.ListenAndServe())
}

// handler verifies each POST with v, prints it to out and answers 200, or
// 409 for an id it has already printed.
func handler(v *webhooksig.Verifier, out io.Writer) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		d, err := v.Verify(r)
		if err != nil {
			status := http.StatusBadRequest
			var ve *webhooksig.VerifyError
			if errors.As(err, &ve) {
				status = ve.Status()
			}
			log.Printf("webhookreceiver: refused: %v", err)
			http.Error(w, err.Error(), status)
			return
		}
		mu.Lock()
		dup := seen[d.ID]
		seen[d.ID] = true
		mu.Unlock()
		if dup {
			http.Error(w, "duplicate "+d.ID, http.StatusConflict)
			return
		}
		fmt.Fprintf(out, "%s %s %s %s\n", d.ID, d.Type, d.Timestamp.Format(time.RFC3339Nano), d.Data)
	})
}
