package ldcroute

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"golang.org/x/net/netutil"

	"github.com/moeproxy/moe/shared/api"
)

// The admin API of ldc-route. A golang filter cannot add handlers to Envoy's
// admin, so the plugin serves its own small HTTP API on a loopback address.
//
// One server per address, shared by every config that names it (a filter
// config and its per-route configs, or the old and the new version during an
// xDS update: Envoy builds the new config before it drops the old one). The
// server starts with the first config on the address and stops when the last
// one is destroyed. The marks it holds (unit -> down or up) apply to every
// attached config with a unit of that name, so they survive a config update;
// the listing shows the newest config.
//
// Bounds: at most maxAdminConns connections at once (more wait in the accept
// queue), 2 s to send the request headers, 5 s for the request and the
// answer, headers up to 8 KiB, request bodies are not read.

const (
	maxAdminConns     = 8
	maxAdminHeader    = 8 << 10
	adminReadHeader   = 2 * time.Second
	adminReadWrite    = 5 * time.Second
	adminIdle         = 30 * time.Second
	adminMaxBodyBytes = 1 << 10
)

type adminServer struct {
	addr string
	srv  *http.Server
	ln   net.Listener
	log  api.Logger

	mu      sync.Mutex
	configs []*Config       // attached, newest last
	marks   map[string]bool // unit name -> down (true) or up (false), set through the API
}

var (
	serversMu sync.Mutex
	servers   = map[string]*adminServer{}
)

// attach adds c to the server on its admin address, starting the server if
// c is the first config there, and publishes c's snapshot with the marks.
func attach(c *Config, lg api.Logger) (*adminServer, error) {
	ap, err := netip.ParseAddrPort(c.Admin.Address) // checked by Validate
	if err != nil {
		return nil, err
	}
	key := ap.String()
	serversMu.Lock()
	defer serversMu.Unlock()
	s := servers[key]
	if s == nil {
		ln, err := net.Listen("tcp", key)
		if err != nil {
			return nil, fmt.Errorf("cannot serve the admin API: %v", err)
		}
		s = &adminServer{addr: key, ln: ln, log: lg, marks: map[string]bool{}}
		s.srv = &http.Server{
			Handler:           s.routes(),
			ReadHeaderTimeout: adminReadHeader,
			ReadTimeout:       adminReadWrite,
			WriteTimeout:      adminReadWrite,
			IdleTimeout:       adminIdle,
			MaxHeaderBytes:    maxAdminHeader,
			ErrorLog:          log.New(io.Discard, "", 0),
		}
		limited := netutil.LimitListener(ln, maxAdminConns)
		go s.serve(limited)
		servers[key] = s
		lg.Infof("admin API listening on http://%s/units", key)
	}
	s.mu.Lock()
	s.configs = append(s.configs, c)
	c.publish(s.marks)
	s.mu.Unlock()
	return s, nil
}

// serve runs the HTTP server until Close. net/http recovers handler panics;
// this recover is for anything else, so that the admin API can never take
// Envoy down.
func (s *adminServer) serve(l net.Listener) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Errorf("admin API on %s stopped: %v", s.addr, r)
		}
	}()
	if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Errorf("admin API on %s stopped: %v", s.addr, err)
	}
}

// detach removes c; the last config stops the server (its marks go with it).
func (s *adminServer) detach(c *Config) {
	serversMu.Lock()
	defer serversMu.Unlock()
	s.mu.Lock()
	s.configs = slices.DeleteFunc(s.configs, func(x *Config) bool { return x == c })
	empty := len(s.configs) == 0
	s.mu.Unlock()
	if empty && servers[s.addr] == s {
		delete(servers, s.addr)
		_ = s.srv.Close()
		// Close closes the listeners Serve has taken over; the serve goroutine
		// may not have started yet, so close it here too: when detach returns
		// the address is free (a config built right after binds it again).
		_ = s.ln.Close()
		s.log.Infof("admin API on %s stopped (no config uses it)", s.addr)
	}
}

func (s *adminServer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /units", s.list)
	mux.HandleFunc("GET /units/{name}", s.one)
	for _, action := range []string{"down", "up", "reset"} {
		mux.HandleFunc("POST /units/{name}/"+action, func(w http.ResponseWriter, r *http.Request) { s.mark(w, r, action) })
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, adminMaxBodyBytes)
		if !s.authorized(r) {
			w.Header().Set("www-authenticate", `Bearer realm="ldc-route"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// authorized checks the newest config's token, in constant time.
func (s *adminServer) authorized(r *http.Request) bool {
	s.mu.Lock()
	var token string
	if n := len(s.configs); n > 0 {
		token = s.configs[n-1].Admin.Token
	}
	s.mu.Unlock()
	if token == "" {
		return true
	}
	got := r.Header.Get("authorization")
	return subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) == 1
}

// unitView is one unit as the API shows it.
type unitView struct {
	Name         string   `json:"name"`
	Cluster      string   `json:"cluster"`
	Slots        []string `json:"slots"`
	Fallback     []string `json:"fallback"`
	DownInConfig bool     `json:"down_in_config"`
	// Admin is the API's mark: "down", "up" or "" (none: the config decides).
	Admin string `json:"admin"`
	Down  bool   `json:"down"`
	// Serving is the unit that takes this unit's requests now ("" = none:
	// the unit and its fallbacks are down).
	Serving string `json:"serving"`
}

type listView struct {
	Units       []unitView `json:"units"`
	DefaultUnit string     `json:"default_unit"`
}

// view describes the newest config's units; call with s.mu held.
func (s *adminServer) viewLocked() (listView, bool) {
	if len(s.configs) == 0 {
		return listView{}, false
	}
	c := s.configs[len(s.configs)-1]
	snap := c.state.Load()
	out := listView{DefaultUnit: c.DefaultUnit, Units: make([]unitView, len(c.units))}
	for i := range c.units {
		u := &c.units[i]
		v := unitView{
			Name: u.Name, Cluster: u.Cluster, Slots: nonNil(u.Slots), Fallback: nonNil(u.Fallback),
			DownInConfig: u.Down, Down: snap.down[i],
		}
		if m, ok := s.marks[u.Name]; ok {
			v.Admin = "up"
			if m {
				v.Admin = "down"
			}
		}
		if t := snap.route[i]; t >= 0 {
			v.Serving = c.units[t].Name
		}
		out.Units[i] = v
	}
	return out, true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *adminServer) list(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	v, ok := s.viewLocked()
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "no config"})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *adminServer) one(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	v, _ := s.viewLocked()
	s.mu.Unlock()
	for _, u := range v.Units {
		if u.Name == r.PathValue("name") {
			writeJSON(w, http.StatusOK, u)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such unit"})
}

// mark handles POST /units/{name}/down|up|reset: it changes the mark and
// publishes a new snapshot to every attached config before it answers, so
// the next request already sees it.
func (s *adminServer) mark(w http.ResponseWriter, r *http.Request, action string) {
	name := r.PathValue("name")
	s.mu.Lock()
	v, ok := s.viewLocked()
	known := false
	for _, u := range v.Units {
		known = known || u.Name == name
	}
	if !ok || !known {
		s.mu.Unlock()
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such unit"})
		return
	}
	switch action {
	case "down":
		s.marks[name] = true
	case "up":
		s.marks[name] = false
	default:
		delete(s.marks, name)
	}
	for _, c := range s.configs {
		c.publish(s.marks)
	}
	newest := s.configs[len(s.configs)-1]
	v, _ = s.viewLocked()
	s.mu.Unlock()
	newest.adminChanges.Inc(1)
	s.log.Infof("admin API: unit %s %s (from %s)", name, action, r.RemoteAddr)
	for _, u := range v.Units {
		if u.Name == name {
			writeJSON(w, http.StatusOK, u)
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("content-type", "application/json")
	w.Header().Set("cache-control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
