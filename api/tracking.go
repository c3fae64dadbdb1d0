package api

import (
	"errors"
	"html/template"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/memocart/memocart/models"
)

// trackingTemplate is the public tracking page behind tracking_url. It
// shows progress only: no names, addresses, e-mails or amounts, because
// anyone holding the link can open it.
var trackingTemplate = template.Must(template.New("track").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Order {{.Number}} · Memocart</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}
ol{list-style:none;padding:0}li{padding:.5rem 0;border-bottom:1px solid #eee}.done{font-weight:600}.todo{color:#999}
.status{font-size:1.4rem}</style></head><body>
<h1>Order {{.Number}}</h1>
<p class="status">Status: <strong>{{.Status}}</strong></p>
{{if .Carrier}}<p>Carrier: {{.Carrier}} · Tracking number: {{.TrackingNumber}}{{if .EstimatedDelivery}} · Estimated delivery: {{.EstimatedDelivery}}{{end}}</p>{{end}}
<ol>{{range .Steps}}<li class="{{if .Completed}}done{{else}}todo{{end}}">{{if .Completed}}✓{{else}}○{{end}} {{.Name}}{{if .At}} — {{.At.UTC.Format "2006-01-02 15:04 UTC"}}{{end}}</li>{{end}}</ol>
</body></html>`))

// trackingPage is GET /track/{number}.
func (s *Server) trackingPage(c *gin.Context) {
	number, ok := models.NormalizeOrderNumber(c.Param("number"))
	var o models.Order
	var err error
	if ok {
		o, err = s.deps.Store.OrderByNumber(c.Request.Context(), number)
	}
	if !ok || errors.Is(err, models.ErrOrderNotFound) {
		c.Data(http.StatusNotFound, "text/plain; charset=utf-8", []byte("No order with this number.\n"))
		return
	}
	if err != nil {
		abort(c, err)
		return
	}
	c.Status(http.StatusOK)
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	_ = trackingTemplate.Execute(c.Writer, map[string]any{
		"Number": o.Number, "Status": o.Status, "Steps": o.TrackingSteps(),
		"Carrier": o.Shipment.Carrier, "TrackingNumber": o.Shipment.TrackingNumber,
		"EstimatedDelivery": o.Shipment.EstimatedDelivery,
	})
}
