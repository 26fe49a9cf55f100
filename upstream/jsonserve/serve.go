// Package jsonserve answers JSON requests on stdin, one a line, with the handlers a harness registers.
//
// A request is {"fn": NAME, "args": {...}, "gates": {GATE: bool}}; the answer is one line holding
// {"result": ...}, {"error": TEXT} (the function returned an error), {"panic": TEXT} (it panicked)
// or {"fault": TEXT} (the request itself was wrong). Gates are set for that one call only.
package jsonserve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// Handler answers one request's arguments.
type Handler func(args json.RawMessage) (any, error)

type request struct {
	Fn    string          `json:"fn"`
	Args  json.RawMessage `json:"args"`
	Gates map[string]bool `json:"gates"`
}

// Fault marks a request the harness could not carry out, as opposed to an error of the function called.
type Fault struct{ error }

// Decode reads a request's arguments, a Fault if they do not fit.
func Decode(raw json.RawMessage, into any) error {
	if err := json.Unmarshal(raw, into); err != nil {
		return Fault{fmt.Errorf("args: %w", err)}
	}
	return nil
}

// Serve answers requests from stdin on stdout until stdin ends.
func Serve(handlers map[string]Handler) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		var answer map[string]any
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			answer = map[string]any{"fault": "request: " + err.Error()}
		} else {
			answer = serve(handlers, req)
		}
		if err := out.Encode(answer); err != nil {
			_ = out.Encode(map[string]any{"fault": "answer: " + err.Error()})
		}
	}
}

func serve(handlers map[string]Handler, req request) (answer map[string]any) {
	handler, known := handlers[req.Fn]
	if !known {
		return map[string]any{"fault": "unknown fn " + req.Fn}
	}
	defer func() {
		if p := recover(); p != nil {
			answer = map[string]any{"panic": fmt.Sprint(p)}
		}
	}()
	restore, err := setGates(req.Gates)
	if err != nil {
		return map[string]any{"fault": "gates: " + err.Error()}
	}
	defer func() {
		if err := restore(); err != nil {
			answer = map[string]any{"fault": "gates: " + err.Error()}
		}
	}()
	result, err := handler(req.Args)
	if f, ok := err.(Fault); ok {
		return map[string]any{"fault": f.Error()}
	} else if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"result": result}
}

// setGates sets the named gates of the kubelet's global feature gate and returns how to put them back.
func setGates(gates map[string]bool) (func() error, error) {
	before := map[string]bool{}
	for name := range gates {
		before[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return nil, err
	}
	return func() error { return utilfeature.DefaultMutableFeatureGate.SetFromMap(before) }, nil
}
