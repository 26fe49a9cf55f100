// Command harness answers JSON requests on stdin, one a line, with the answers of k8s.io/kubernetes v1.27.7
// (the request loop is upstream/jsonserve's).
package main

import jsonserve "upstream-jsonserve"

func main() { jsonserve.Serve(handlers) }
