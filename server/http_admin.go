package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/netmgr/netmgr/client"
	"github.com/netmgr/netmgr/client/dblang"
	"github.com/netmgr/netmgr/fsm"
)

// handleLoadDatabase replaces the database with the posted declarations,
// as one replicated command: a text with any error changes nothing.
func (s *Server) handleLoadDatabase(w http.ResponseWriter, r *http.Request) {
	var req client.DatabaseText
	if err := decodeBody(r, &req); err != nil {
		s.writeError(w, http.StatusBadRequest, fmt.Errorf("read database request: %w", err))
		return
	}
	user, ok := s.requireAdmin(w, r, "load database")
	if !ok {
		return
	}
	if req.Filename == "" {
		req.Filename = "database"
	}
	db, err := parseDatabase(req.Filename, []byte(req.Text))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, err)
		return
	}
	if err := errors.Join(checkOwnerSettings(db, s.groupAppliesNow), checkKillGrace(db, s.groupAppliesNow),
		checkPolicy(db, s.groupAppliesNow), checkShares(db, s.groupAppliesNow),
		checkLicenses(db, s.groupAppliesNow), checkInteractive(db, s.groupAppliesNow), checkPrimeTime(db, s.groupAppliesNow),
		checkPreempt(db, s.groupAppliesNow)); err != nil {
		s.writeError(w, http.StatusConflict, err)
		return
	}
	res, err := s.apply(fsm.LoadDatabaseType, fsm.LoadDatabase{At: time.Now().UTC(), Source: req.Filename, By: user, Database: db})
	if err != nil {
		s.writeApplyError(w, err)
		return
	}
	if res.Err != nil {
		s.writeError(w, http.StatusBadRequest, res.Err)
		return
	}
	s.log.Info("database loaded", "source", req.Filename, "by", user, "index", res.Index, "draining", res.Draining)
	s.writeJSON(w, http.StatusOK, client.LoadResponse{
		Index: res.Index, Keys: len(db.Keys), MTypes: len(db.MTypes), Machines: len(db.Machines),
		Queues: len(db.Queues), Draining: res.Draining,
	})
}

// handleShowDatabase prints the live database in the declaration language.
func (s *Server) handleShowDatabase(w http.ResponseWriter, r *http.Request) {
	var text []byte
	s.fsm.Read(func(v fsm.View) {
		db, _ := v.Database()
		text = dblang.Format(databaseFromLog(db))
	})
	s.writeJSON(w, http.StatusOK, client.DatabaseText{Text: string(text)})
}
