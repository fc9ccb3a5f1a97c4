package main

import (
	"flag"

	"github.com/basin-csi/basin/pkg/driver"
)

// healthAddressFlag declares --health-address into p: the in-process
// replacement of the livenessprobe sidecar (controller and node).
func healthAddressFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "health-address", "", "serve GET http://`ADDRESS`/healthz (host:port, e.g. :9808), which probes the plugin through its CSI socket; empty: none")
}

// registrationFlags declares the flags of the node plugin's kubelet
// registration into r: the in-process replacement of the
// node-driver-registrar sidecar.
func registrationFlags(fs *flag.FlagSet, r *driver.Registration) {
	fs.StringVar(&r.Dir, "registration-dir", "", "kubelet's plugin registry `directory` as mounted in this container (host: /var/lib/kubelet/plugins_registry); empty: do not register with kubelet")
	fs.StringVar(&r.KubeletEndpoint, "kubelet-registration-path", "/var/lib/kubelet/plugins/"+driver.DefaultName+"/csi.sock",
		"`path` of the CSI socket on the host, as kubelet opens it")
}
