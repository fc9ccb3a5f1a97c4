package driver

import (
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/basin-csi/basin/pkg/mountspec"
)

// supportedMode reports whether Basin serves an access mode. Basin
// volumes are file systems that many pods on many nodes may share;
// MULTI_NODE_SINGLE_WRITER is left out because nothing would stop a second
// node's writer.
func supportedMode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// readerMode reports whether an access mode never writes.
func readerMode(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

// checkCapabilities reports why caps cannot be served, or nil. readOnly is
// the volume's readOnly attribute: such a volume serves reader modes only.
func checkCapabilities(caps []*csi.VolumeCapability, readOnly bool) error {
	if len(caps) == 0 {
		return errors.New("no volume capabilities given")
	}
	for _, c := range caps {
		if err := checkCapability(c, readOnly); err != nil {
			return err
		}
	}
	return nil
}

func checkCapability(c *csi.VolumeCapability, readOnly bool) error {
	switch {
	case c.GetBlock() != nil:
		return errors.New("block access is not supported: Basin volumes are file systems (use volumeMode: Filesystem)")
	case c.GetMount() == nil:
		return errors.New("the capability has no access type; want mount")
	}
	if _, err := mountspec.ParseOptions(c.GetMount().GetMountFlags()); err != nil {
		// A StorageClass's or PV's mountOptions: refused at CreateVolume
		// already, not only when a pod mounts the volume.
		return fmt.Errorf("volume capability mount flags (the StorageClass's or PV's mountOptions): %w", err)
	}
	if _, err := mountspec.ParseMountGroup(c.GetMount().GetVolumeMountGroup()); err != nil {
		return err
	}
	mode := c.GetAccessMode().GetMode()
	if !supportedMode(mode) {
		return fmt.Errorf("access mode %s is not supported (supported: ReadWriteOnce, ReadWriteOncePod, ReadOnlyMany, ReadWriteMany)", mode)
	}
	if readOnly && !readerMode(mode) {
		return fmt.Errorf("the volume is read-only (readOnly=true) but access mode %s writes; ask for ReadOnlyMany", mode)
	}
	return nil
}

// controllerCapabilities are the RPCs the controller implements.
func controllerCapabilities() []*csi.ControllerServiceCapability {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return caps
}
