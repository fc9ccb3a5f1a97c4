// Package warmupctl is the controller of the Warmup resource
// (basin.csi.dev/v1alpha1): it chooses nodes (nodes.go), starts one pod
// per chosen node that mounts the claim read-only and runs csi-driver
// warmup (pod.go), folds what the pods report into the Warmup's status
// (status.go), deletes the pods when every one has ended, and starts the
// next run on a spec change, a new spec.rerun or spec.schedule
// (schedule.go).
//
// A run's state lives in the Warmup's status, never in memory: a
// controller that restarts (or a new leader) picks a run up where it is.
// Status.Runs numbers the runs; a pod's labels name its Warmup (by UID)
// and run, so pods of an earlier run are recognised and deleted.
//
// What a pod did reaches the controller through its termination message
// (csi-driver warmup --result /dev/termination-log: a small JSON
// warmup.Report), so the controller reads no logs. engine.go is the one
// file that knows the warmup engine: the pods' command line and the
// Report. While a pod runs, its
// node's VolumeCache (written by the node plugin, if it reports) gives the
// progress: the objects and bytes the node's cache holds of the volume.
package warmupctl
