package main

// SourceFileFirstSet: the first update v1.27.7's file source sends for a path (config.NewSourceFile reads
// the path at once, then every period; the period given here is an hour, so the answer is that first read).

import (
	"encoding/json"
	"errors"
	"time"
	jsonserve "upstream-jsonserve"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/kubelet/config"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
)

func init() { handlers["SourceFileFirstSet"] = sourceFileFirstSet }

func sourceFileFirstSet(raw json.RawMessage) (any, error) {
	var a struct {
		Path string `json:"path"`
		Node string `json:"node"`
	}
	if err := jsonserve.Decode(raw, &a); err != nil {
		return nil, err
	}
	updates := make(chan interface{}, 1)
	config.NewSourceFile(a.Path, types.NodeName(a.Node), time.Hour, updates)
	select {
	case got := <-updates:
		update := got.(kubetypes.PodUpdate)
		pods := []map[string]string{}
		for _, pod := range update.Pods {
			pods = append(pods, map[string]string{"name": pod.Name, "namespace": pod.Namespace, "uid": string(pod.UID)})
		}
		return map[string]any{"op": int(update.Op), "source": update.Source, "pods": pods}, nil
	case <-time.After(10 * time.Second):
		return nil, errors.New("no update from the file source within 10s")
	}
}
