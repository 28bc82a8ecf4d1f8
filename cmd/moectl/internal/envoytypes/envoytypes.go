// Package envoytypes links every config message type of the Envoy v1.39 API (go-control-plane
// envoy + contrib, cncf xds) into the binary (contrib also carries the Istio proxy's own
// filters: alpn, istio_stats, metadata_exchange, ...), so that `moectl validate` resolves any "@type" Envoy's contrib image or Istio's
// proxy would. The import list is types.gen.go; TestImportListIsComplete regenerates it with
// -update after a go-control-plane upgrade.
package envoytypes

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoregistry"
)

// Types resolves every linked message type.
func Types() *protoregistry.Types { return protoregistry.GlobalTypes }

// Unlinked reports whether a message full name belongs to an Envoy or Istio config package
// that moectl does not link (its Go package needs gRPC or OpenTelemetry modules): such a type
// is valid in Envoy, but moectl cannot check its contents.
func Unlinked(fullName string) bool {
	for _, p := range unlinked {
		if strings.HasPrefix(fullName, p+".") {
			return true
		}
	}
	return false
}
