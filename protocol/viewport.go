package protocol

import (
	"fmt"
	"strconv"
	"strings"
)

// Viewport is what a tab's pages are laid out for: a size in CSS pixels,
// device pixels per CSS pixel, and what a phone adds (a mobile layout
// viewport, touch, its user agent). The zero Viewport is no emulation:
// the browser window's own size.
type Viewport struct {
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	DeviceScaleFactor float64 `json:"deviceScaleFactor"`
	Mobile            bool    `json:"mobile,omitempty"`
	Touch             bool    `json:"touch,omitempty"`
	UserAgent         string  `json:"userAgent,omitempty"` // "": the browser's own
	Device            string  `json:"device,omitempty"`    // the preset it came from
}

// The limits of an explicit device scale factor: a low-density screen's
// half to a phone's 4.
const (
	MinDeviceScaleFactor = 0.5
	MaxDeviceScaleFactor = 4
)

// The limits of a viewport's size, in CSS pixels: a phone's smallest to an
// 8K screen's width. A bigger one is a mistake (a screenshot of it would
// not fit a bus message, nor Chromium's largest texture).
const (
	MinViewportSize = 100
	MaxViewportSize = 7680
)

// DefaultViewport is every tab's unless configured otherwise: a desktop
// one, as Playwright's, so sites show their desktop layout.
var DefaultViewport = Viewport{Width: 1280, Height: 720, DeviceScaleFactor: 1, Device: "desktop"}

// Devices are the named presets of device emulation: real devices' page
// viewports (the screen less the browser's bars, in CSS pixels), pixel
// ratios and user agents.
var Devices = []Viewport{
	DefaultViewport,
	{Device: "iPhone 13", Width: 390, Height: 664, DeviceScaleFactor: 3, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 15_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.0 Mobile/15E148 Safari/604.1"},
	{Device: "iPhone 15 Pro", Width: 393, Height: 659, DeviceScaleFactor: 3, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"},
	{Device: "Pixel 7", Width: 412, Height: 839, DeviceScaleFactor: 2.625, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36"},
	{Device: "iPad Mini", Width: 768, Height: 1024, DeviceScaleFactor: 2, Mobile: true, Touch: true,
		UserAgent: "Mozilla/5.0 (iPad; CPU OS 15_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.0 Mobile/15E148 Safari/604.1"},
}

// DeviceNames are the presets' names, in table order.
func DeviceNames() []string {
	names := make([]string, len(Devices))
	for i, d := range Devices {
		names[i] = d.Device
	}
	return names
}

// LookupDevice returns the preset of a name.
func LookupDevice(name string) (Viewport, bool) {
	for _, d := range Devices {
		if d.Device == name {
			return d, true
		}
	}
	return Viewport{}, false
}

// NewViewport makes a viewport from a size ("1280x720", "" for the
// preset's) and a device preset ("" for a desktop one), checking both.
func NewViewport(size, device string) (Viewport, error) {
	vp := Viewport{DeviceScaleFactor: 1}
	if device != "" {
		d, ok := LookupDevice(device)
		if !ok {
			return Viewport{}, fmt.Errorf("device %q is not a preset (one of %s)", device, quoteList(DeviceNames()))
		}
		vp = d
	}
	if size != "" {
		w, h, err := ParseSize(size)
		if err != nil {
			return Viewport{}, err
		}
		if vp.Width != w || vp.Height != h {
			vp.Width, vp.Height = w, h
			if vp.Device == DefaultViewport.Device {
				vp.Device = ""
			}
		}
	} else if device == "" {
		return DefaultViewport, nil
	}
	return vp, vp.check()
}

// ParseSize reads a size WIDTHxHEIGHT ("1280x720") within the limits.
func ParseSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if ok {
		w, err = strconv.Atoi(strings.TrimSpace(ws))
		if err == nil {
			h, err = strconv.Atoi(strings.TrimSpace(hs))
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%q is not a size: give WIDTHxHEIGHT in CSS pixels, e.g. 1280x720", s)
	}
	return w, h, checkSize(w, h)
}

func checkSize(w, h int) error {
	if w < MinViewportSize || h < MinViewportSize || w > MaxViewportSize || h > MaxViewportSize {
		return fmt.Errorf("%dx%d is not a viewport size: width and height are %d to %d CSS pixels", w, h, MinViewportSize, MaxViewportSize)
	}
	return nil
}

func (v Viewport) check() error { return checkSize(v.Width, v.Height) }

// String is the size and, when it came from one, the preset.
func (v Viewport) String() string {
	if v.Width == 0 {
		return "window"
	}
	s := fmt.Sprintf("%dx%d", v.Width, v.Height)
	if v.Device != "" {
		s += " (" + v.Device + ")"
	}
	return s
}

// ActionViewport is the viewport a resize action asks for: its device
// preset (desktop when none), resized to its width and height if given,
// with mobile, touch and userAgent turned on or set if given.
func ActionViewport(a Action) (Viewport, error) {
	if a.Device == "" && (a.Width == 0 || a.Height == 0) {
		return Viewport{}, badRequest("resize: give <width> and <height> (%d to %d CSS pixels), a device (one of %s), or both", MinViewportSize, MaxViewportSize, quoteList(DeviceNames()))
	}
	if (a.Width == 0) != (a.Height == 0) {
		return Viewport{}, badRequest("resize: give both <width> and <height>, not only one")
	}
	size := ""
	if a.Width != 0 {
		size = fmt.Sprintf("%dx%d", a.Width, a.Height)
	}
	vp, err := NewViewport(size, a.Device)
	if err != nil {
		return Viewport{}, badRequest("resize: %v", err)
	}
	if a.Device == "" {
		vp.Device = ""
		if vp.Width == DefaultViewport.Width && vp.Height == DefaultViewport.Height {
			vp.Device = DefaultViewport.Device
		}
	}
	if a.DeviceScaleFactor != 0 && (a.DeviceScaleFactor < MinDeviceScaleFactor || a.DeviceScaleFactor > MaxDeviceScaleFactor) {
		return Viewport{}, badRequest("resize: deviceScaleFactor %v is out of range (%v to %v)", a.DeviceScaleFactor, MinDeviceScaleFactor, MaxDeviceScaleFactor)
	}
	if a.Mobile || a.Touch || a.UserAgent != "" || a.DeviceScaleFactor != 0 {
		if a.DeviceScaleFactor != 0 {
			vp.DeviceScaleFactor = a.DeviceScaleFactor
		}
		vp.Mobile = vp.Mobile || a.Mobile
		vp.Touch = vp.Touch || a.Touch
		if a.UserAgent != "" {
			vp.UserAgent = a.UserAgent
		}
		if d, ok := LookupDevice(vp.Device); !ok || d != vp {
			vp.Device = "" // no longer the preset
		}
	}
	return vp, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
