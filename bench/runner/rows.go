package runner

import (
	"fmt"

	"github.com/basin-csi/basin/bench/report"
)

// Phase identifiers: the keys of a system's cells.
const (
	smallCold      = "small/cold"
	smallWarm      = "small/warm"
	smallRemount   = "small/remount"
	smallDropCache = "small/dropcache"
	ckptCold       = "ckpt/cold"
	ckptWarm       = "ckpt/warm"
	randCold       = "rand/cold"
	randWarm       = "rand/warm"
	metaCold       = "meta/cold"
	metaWarm       = "meta/warm"
	writeWrite     = "write/write"
	writeReadback  = "write/readback"
	createWrite    = "create/write"
	torchCold      = "torch/cold"
	torchWarm      = "torch/warm"
	imagesCold     = "images/cold"
	imagesWarm     = "images/warm"
)

// NumScenarios is the number of scenarios (rowDefs numbers them 1–8).
const NumScenarios = 8

// rowDef names one report row.
type rowDef struct {
	id, scenario, phase string
	unit                report.Unit
	label               string // short, for the chart
}

// rowDefs lists the report's rows in order.
func rowDefs(c Config) []rowDef {
	small := fmt.Sprintf("1. small-file epoch, %d threads, random order", c.Threads)
	ckpt := "2. checkpoint read, 1 thread sequential"
	rnd := fmt.Sprintf("3. random %s reads, %d threads", report.Size(c.RandSize), c.RandThreads)
	meta := "4. metadata walk + stat"
	write := "5. checkpoint write, 1 thread"
	torch := fmt.Sprintf("6. PyTorch DataLoader, %d workers", c.Torch.Workers)
	create := fmt.Sprintf("7. creating %s files in new directories (cp -r), 1 thread", report.Size(c.Sets.Create.FileSize))
	images := fmt.Sprintf("8. JPEG ImageFolder decoded by DataLoader, %d workers", c.Torch.Workers)
	return []rowDef{
		{smallCold, small, "cold", report.FilesPerSec, "1 small epoch cold"},
		{smallWarm, small, "warm", report.FilesPerSec, "1 small epoch warm"},
		{smallRemount, small, "warm after remount", report.FilesPerSec, "1 small remount"},
		{smallDropCache, small, "warm after drop_caches", report.FilesPerSec, "1 small drop_caches"},
		{ckptCold, ckpt, "cold", report.MBPerSec, "2 checkpoint cold"},
		{ckptWarm, ckpt, "warm after drop_caches", report.MBPerSec, "2 checkpoint warm"},
		{randCold, rnd, "cold", report.MBPerSec, "3 random 1M cold"},
		{randWarm, rnd, "warm", report.MBPerSec, "3 random 1M warm"},
		{metaCold, meta, "cold", report.EntriesPerSec, "4 walk cold"},
		{metaWarm, meta, "warm", report.EntriesPerSec, "4 walk warm"},
		{writeWrite, write, "write until in the bucket", report.MBPerSec, "5 write"},
		{writeReadback, write, "read back after remount", report.MBPerSec, "5 read back"},
		{torchCold, torch, "cold", report.FilesPerSec, "6 torch cold"},
		{torchWarm, torch, "warm", report.FilesPerSec, "6 torch warm"},
		{createWrite, create, "create until in the bucket", report.FilesPerSec, "7 create"},
		{imagesCold, images, "cold", report.FilesPerSec, "8 JPEG cold"},
		{imagesWarm, images, "warm", report.FilesPerSec, "8 JPEG warm"},
	}
}
