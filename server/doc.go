// Package server is a netmgr server: a member of the Raft group that holds
// the database (package fsm), the HTTP/JSON API for users and stubs, and,
// while it leads, the scheduler, the dispatcher and the membership watcher.
//
// All writes go through one apply helper on the leader; a follower forwards
// write requests to the leader and redirects consistent reads to it. Servers
// find each other through the memberlist pool they share with the stubs and
// form the Raft group by themselves once --bootstrap-expect servers are seen.
//
// It does not run jobs (package stub) and does not parse user input beyond
// the wire types of package client.
package server
