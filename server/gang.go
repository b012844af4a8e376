package server

import "github.com/netmgr/netmgr/fsm"

// gangHosts is the machine of every instance of gang job j in instance
// order, for the Start of each (StartRequest.GangHosts); nil for a job
// that is not a gang. The FSM places a gang's instances in one entry, so
// when one is owed its Start every instance has its machine.
func gangHosts(j *fsm.Job) []string {
	if !j.Spec.Gang {
		return nil
	}
	hosts := make([]string, len(j.Instances))
	for i := range j.Instances {
		hosts[i] = j.Instances[i].Machine
	}
	return hosts
}
