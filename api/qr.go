package api

import (
	"fmt"
	"html/template"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// qrSVG renders text as a QR code in inline SVG: no image request (the
// tracking page's Content-Security-Policy allows none) and sharp at any
// size. Medium error correction (15%) keeps a SEP-0007 link with an issuer,
// a memo and a message at a size a phone reads off a laptop screen. The
// code keeps its four-module quiet zone, which scanners need.
func qrSVG(text string) (template.HTML, error) {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return "", fmt.Errorf("encoding QR code: %w", err)
	}
	bits := q.Bitmap()
	n := len(bits)
	var path strings.Builder
	for y, row := range bits {
		// One horizontal run of dark modules per path segment keeps the
		// SVG to a few kilobytes.
		for x := 0; x < len(row); {
			if !row[x] {
				x++
				continue
			}
			start := x
			for x < len(row) && row[x] {
				x++
			}
			fmt.Fprintf(&path, "M%d %dh%dv1h-%dz", start, y, x-start, x-start)
		}
	}
	// Every value interpolated is an integer or the path built above from
	// integers: nothing from the text reaches the markup unescaped.
	svg := fmt.Sprintf(`<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges" role="img" aria-label="QR code of the payment link"><rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="%s"/></svg>`,
		n, n, n, n, path.String())
	return template.HTML(svg), nil
}
