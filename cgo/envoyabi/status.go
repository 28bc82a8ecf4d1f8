package envoyabi

import "C"

// Status is a failed C call's CAPIStatus (api.h).
type Status int

// The statuses the SDK turns into a panic (handleCApiStatus, capi_impl.go);
// it ignores the others for these calls, and so does this package.
const (
	FilterIsGone    Status = -1
	FilterIsDestroy Status = -2
	NotInGo         Status = -3
	InvalidPhase    Status = -4
	InvalidScene    Status = -9
)

// Error reads as the SDK's panic message for the same status.
func (s Status) Error() string {
	switch s {
	case FilterIsGone:
		return "request has been finished"
	case FilterIsDestroy:
		return "golang filter has been destroyed"
	case NotInGo:
		return "not proccessing Go"
	case InvalidPhase:
		return "invalid phase, maybe headers/buffer already continued"
	case InvalidScene:
		return "invalid scene for this API"
	}
	return "unknown status"
}

// Gone reports whether the request ended (Envoy destroyed the filter).
func (s Status) Gone() bool { return s == FilterIsGone || s == FilterIsDestroy }

func result(rc C.int) error {
	switch s := Status(rc); s {
	case FilterIsGone, FilterIsDestroy, NotInGo, InvalidPhase, InvalidScene:
		return s
	}
	return nil
}
