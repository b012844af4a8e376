package server

// relaxedPaceBelow is the pool size below which the leader heartbeats its
// followers at its own slower pace (raftnode's LeaderPaceFactor: every
// 100-200 ms rather than 50-100). In a small pool Raft's heartbeats are
// most of an idle leader's work (3 servers and 2 stubs, medians of 7
// runs before and 8 after: the idle leader 28.5 -> 22.3 ms of CPU a
// second, each follower 10.0 -> 9.0); from the pool size at which the followers start to relay the
// renewals (--lease-relay-from's default) they are a few percent of it,
// and the 100 ms of stall a follower's election timeout then forgives
// matter more: two 5,000-machine runs with the slower pace, on a 2-core
// box that also ran the simulated pool, lost their leader for minutes.
const relaxedPaceBelow = 1000

// relaxedPace reports whether the leader may heartbeat at its own pace:
// the pool is smaller than relaxedPaceBelow.
func (s *Server) relaxedPace() bool { return s.book.Size() < relaxedPaceBelow }
