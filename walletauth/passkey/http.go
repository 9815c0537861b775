package passkey

import (
	"net/http"
	"strconv"
)

// Handler serves the association files at their well-known paths
// ([PathAppleAppSiteAssociation], [PathAssetLinks], [PathRelatedOrigins]) as
// application/json with status 200, for GET and HEAD. A file with nothing to
// say (no Apple app, no Android app, no web origin) answers 404, as does any
// other path; other methods answer 405 with an Allow header. Mount it at the
// root of the RP id host, for example mux.Handle("/.well-known/", h).
func (v *Verifier) Handler() http.Handler {
	files := map[string][]byte{}
	if len(v.cfg.RelyingParty.AppleAppIDs) > 0 {
		files[PathAppleAppSiteAssociation] = v.AppleAppSiteAssociation()
	}
	if len(v.android) > 0 {
		files[PathAssetLinks] = v.AssetLinks()
	}
	if v.related != nil {
		files[PathRelatedOrigins] = v.RelatedOrigins()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(body)
		}
	})
}
