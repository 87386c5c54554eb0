// Command pause holds a pod's namespaces for the kubelet's sandbox, as Kubernetes' own pause
// image does: it waits for SIGINT or SIGTERM and exits. Built here because no registry is
// reachable to pull the published one; static, so it needs nothing else in its image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}
