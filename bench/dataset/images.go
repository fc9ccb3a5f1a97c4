package dataset

import (
	"bytes"
	"image"
	"image/jpeg"
	"io"
	"math/rand/v2"
)

// Images returns the JPEG set: files photos-like JPEGs of varied sizes in
// dirs class directories, the layout torchvision's ImageFolder reads.
func Images(files, dirs int) Set {
	return Set{Name: "images", Layout: LayoutImages, Files: files, Dirs: dirs, Seed: DefaultSeed}
}

// Object returns the content of the object at key and its size: the PCG
// stream of FileSize bytes, or for the images set a generated JPEG.
func (s Set) Object(key string) (io.Reader, int64, error) {
	if s.Layout != LayoutImages {
		return s.Content(key, s.FileSize), s.FileSize, nil
	}
	b, err := s.JPEG(key)
	if err != nil {
		return nil, 0, err
	}
	return bytes.NewReader(b), int64(len(b)), nil
}

// JPEG encodes the image of key: 160 to 800 pixels a side, smooth
// gradients under noise, quality 75 to 95, so that files range from about
// 10 KiB to 250 KiB like a photo data set's and take real work to decode.
func (s Set) JPEG(key string) ([]byte, error) {
	rng := rand.New(s.source(key))
	w, ht := 160+rng.IntN(641), 160+rng.IntN(641)
	noise := 4 + rng.IntN(40)
	img := image.NewYCbCr(image.Rect(0, 0, w, ht), image.YCbCrSubsampleRatio420)
	fx, fy := rng.Float64()*3, rng.Float64()*3
	for y := range ht {
		for x := range w {
			v := 128 + 100*((float64(x)*fx/float64(w))-(float64(y)*fy/float64(ht)))/3
			img.Y[img.YOffset(x, y)] = clamp(int(v) + rng.IntN(noise) - noise/2)
		}
	}
	for y := range (ht + 1) / 2 {
		for x := range (w + 1) / 2 {
			i := img.COffset(2*x, 2*y)
			img.Cb[i] = clamp(128 + (x*60)/w - 15 + rng.IntN(noise/2+1))
			img.Cr[i] = clamp(128 + (y*60)/ht - 15 + rng.IntN(noise/2+1))
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 75 + rng.IntN(21)}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func clamp(v int) uint8 { return uint8(min(max(v, 0), 255)) }
