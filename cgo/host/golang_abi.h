// The C structs and enums shared with a golang-filter .so built against Envoy v1.39.0
// (contrib/golang/common/go/api/api.h:18-83). Declared here (not included from Envoy) with the
// exact same layout; static_asserts below pin the x86-64 sizes Go was compiled against.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

extern "C" {

typedef struct {
  const char* data;
  uint64_t len;
} Cstring;

struct httpRequest;

typedef struct {
  struct httpRequest* req;
  int is_encoding;
  int state;
} processState;

typedef struct httpRequest {
  Cstring plugin_name;
  uint64_t configId;
  uint32_t worker_id;
  // Written by the worker, read by goroutines: atomic as in api.h (_Atomic(int)).
  std::atomic<int> is_golang_processing_log;
} httpRequest;

typedef struct {
  uint64_t plugin_name_ptr;
  uint64_t plugin_name_len;
  uint64_t config_ptr;
  uint64_t config_len;
  int is_route_config;
  uint32_t concurrency;
} httpConfig;

typedef enum { Set, Append, Prepend } bufferAction;
typedef enum { HeaderSet, HeaderAdd } headerAction;

typedef enum {
  CAPIOK = 0,
  CAPIFilterIsGone = -1,
  CAPIFilterIsDestroy = -2,
  CAPINotInGo = -3,
  CAPIInvalidPhase = -4,
  CAPIValueNotFound = -5,
  CAPIYield = -6,
  CAPIInternalFailure = -7,
  CAPISerializationFailure = -8,
  CAPIInvalidScene = -9,
  CAPIInvalidIPAddress = -10,
} CAPIStatus;

// cgo's GoString as Go passes it in CopyHeaders/SendLocalReply.
typedef struct {
  const char* p;
  ptrdiff_t n;
} GoString;

} // extern "C"

static_assert(sizeof(std::atomic<int>) == sizeof(int), "atomic<int> must match _Atomic(int)");
static_assert(sizeof(Cstring) == 16, "Cstring layout");
static_assert(sizeof(httpRequest) == 32, "httpRequest layout (api.h)");
static_assert(offsetof(httpRequest, is_golang_processing_log) == 28, "httpRequest layout");
static_assert(sizeof(processState) == 16, "processState layout (api.h)");
static_assert(sizeof(httpConfig) == 40, "httpConfig layout (api.h)");
static_assert(sizeof(GoString) == 16, "GoString layout");

namespace moe::golang {

// processor_state.h:48-65; Go reads these numbers to pick the phase.
enum class FilterState : int {
  WaitingHeader = 0,
  ProcessingHeader = 1,
  WaitingData = 2,
  WaitingAllData = 3,
  ProcessingData = 4,
  WaitingTrailer = 5,
  ProcessingTrailer = 6,
  Done = 7,
};

// processor_state.h:70-79.
enum class GolangStatus : uint64_t {
  Running = 0,
  LocalReply = 1,
  Continue = 2,
  StopAndBuffer = 3,
  StopAndBufferWatermark = 4,
  StopNoBuffer = 5,
};

// golang_filter.h:160-163.
enum class DestroyReason : uint64_t { Normal = 0, Terminate = 1 };


} // namespace moe::golang
