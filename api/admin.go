package api

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/pastenode/pastenode/node"
)

// handleStatus is GET /api/v1/status.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	in := s.cfg.Store.Info()
	st := Status{
		Node: NodeStatus{
			ID:            in.ID,
			State:         in.State,
			LeaderID:      in.LeaderID,
			Term:          in.Term,
			CommitIndex:   in.CommitIndex,
			AppliedIndex:  in.AppliedIndex,
			LastContactMs: in.LastContact.Milliseconds(),
			Version:       s.cfg.Version,
		},
		Members: []Member{},
	}
	if in.LastContact < 0 {
		st.Node.LastContactMs = -1
	}
	if s.cfg.Cluster != nil {
		for _, m := range s.cfg.Cluster.Members() {
			st.Members = append(st.Members, Member(m))
		}
	}
	st.Store.Pastes, st.Store.Bytes = s.cfg.Store.Stats()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Cluster == nil {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node runs without gossip"))
		return
	}
	var req JoinRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		s.error(w, r, errorf(http.StatusBadRequest, "bad JSON: %v", err))
		return
	}
	if len(req.Addrs) == 0 {
		s.error(w, r, errorf(http.StatusBadRequest, "addrs is empty: give at least one gossip address host:port"))
		return
	}
	if err := s.cfg.Cluster.Join(r.Context(), req.Addrs); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"joined": req.Addrs})
}

func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Cluster == nil {
		s.error(w, r, errorf(http.StatusNotImplemented, "this node runs without gossip"))
		return
	}
	if err := s.cfg.Cluster.Remove(r.Context(), mux.Vars(r)["id"]); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleSnapshot is POST /api/v1/snapshot: 200 with the index, or 204 when
// there is nothing new to snapshot.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	index, err := s.cfg.Store.Snapshot()
	if errors.Is(err, node.ErrNothingNew) {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]uint64{"index": index})
}

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	s.error(w, r, errorf(http.StatusNotImplemented, "export is not built yet"))
}
