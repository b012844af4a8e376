package main

import (
	"errors"
	"reflect"
	"testing"
)

func TestFreezesOf(t *testing.T) {
	inj := []injected{
		{Fault: fault{Kind: faultPauseStub}, Targets: []node{{Name: "stub3"}}, From: 10, To: 16},
		{Fault: fault{Kind: faultPauseServer}, Targets: []node{{Name: "s2"}}, From: 20, To: 25},
		{Fault: fault{Kind: faultPauseStub}, Targets: []node{{Name: "stub1"}}, From: 30, To: 35, Err: errors.New("no such container")},
	}
	want := []freeze{{Host: "stub3", From: 10, To: 16}}
	if got := freezesOf(inj); !reflect.DeepEqual(got, want) {
		t.Errorf("freezesOf = %+v, want %+v (paused stubs only, injected ones only)", got, want)
	}
}
