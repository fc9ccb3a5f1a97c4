#!/usr/bin/python3
"""PyTorch DataLoader epochs over every file below --root, on demand.

Used by basin-bench (scenarios 6 and 8). The files are read whole by
DataLoader worker processes in a seeded random order, the way an
image-classification job reads its training set: in scenario 6 decoding is
left out so the figure is the file system's; with --imagefolder (scenario 8)
--root is a torchvision ImageFolder of JPEGs that the workers decode, resize
and crop to 224×224 tensors, a realistic input pipeline (needs
python3-torchvision).

Protocol, one JSON object per line on stdout: after importing torch and
listing --root the script prints {"ready": true, "files": N,
"list_seconds": S}; then every line "epoch" on stdin runs one epoch and
prints {"files", "bytes", "seconds"}, the seconds counted from the moment the
workers are started; with --progress it also prints {"progress": true,
"files", "bytes", "seconds"} about once a second during the epoch, so that
an epoch stopped at a deadline still has a rate. End of stdin ends the
script. With --epochs N it runs N
epochs without waiting for stdin, for use by hand:

    /usr/bin/python3 bench/torch_epoch.py --root /mnt/small --epochs 2

Run it with Debian's interpreter, which has python3-torch.
"""
import argparse
import json
import os
import sys
import time
import warnings

import torch
from torch.utils.data import DataLoader, Dataset

# 4 workers on a 2-core machine is the setting; the warning about it
# would only clutter the harness's error output.
warnings.filterwarnings("ignore", message=".*worker processes in total.*")


class RawFiles(Dataset):
    """Items are the byte counts of whole files, read on access."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb", buffering=0) as f:
            n = 0
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    return n
                n += len(chunk)


class DecodedImages:
    """An ImageFolder whose items are (224x224 tensor, file size)."""

    def __init__(self, root):
        import io
        from PIL import Image
        from torchvision import datasets, transforms

        self.io, self.Image = io, Image
        self.folder = datasets.ImageFolder(root)
        self.transform = transforms.Compose([
            transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])

    def __len__(self):
        return len(self.folder.samples)

    def __getitem__(self, i):
        path, _ = self.folder.samples[i]
        with open(path, "rb", buffering=0) as f:
            data = f.read()
        img = self.Image.open(self.io.BytesIO(data)).convert("RGB")
        return self.transform(img), len(data)


def list_files(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        out.extend(os.path.join(d, f) for f in sorted(files))
    return out


def epoch(loader, progress):
    files = 0
    total = 0
    it = iter(loader)  # forks the workers
    t0 = last = time.perf_counter()
    for batch in it:
        sizes = batch[1] if isinstance(batch, (list, tuple)) else batch
        files += len(sizes)
        total += int(sizes.sum())
        now = time.perf_counter()
        if progress and now - last >= 1.0:
            emit({"progress": True, "files": files, "bytes": total, "seconds": now - t0})
            last = now
    return {"files": files, "bytes": total, "seconds": time.perf_counter() - t0}


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--imagefolder", action="store_true",
                    help="--root is an ImageFolder of JPEGs: decode, resize and crop every image")
    ap.add_argument("--progress", action="store_true",
                    help="print a progress line about once a second during an epoch")
    ap.add_argument("--epochs", type=int, default=0,
                    help="run this many epochs, then exit (0: wait for 'epoch' lines on stdin)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    data = DecodedImages(args.root) if args.imagefolder else RawFiles(list_files(args.root))
    listed = time.perf_counter() - t0
    if len(data) == 0:
        sys.exit("no files below " + args.root)

    gen = torch.Generator()
    gen.manual_seed(args.seed)
    loader = DataLoader(data, batch_size=args.batch, shuffle=True,
                        num_workers=args.workers, generator=gen)
    emit({"ready": True, "files": len(data), "list_seconds": listed})
    if args.epochs > 0:
        for _ in range(args.epochs):
            emit(epoch(loader, args.progress))
        return
    for line in sys.stdin:
        if line.strip() == "epoch":
            emit(epoch(loader, args.progress))


if __name__ == "__main__":
    main()
