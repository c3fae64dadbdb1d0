package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/memocart/memocart/api/client"
)

// The examples are README.md's, compiled with the tests (they have no
// Output, so they are not run: they need a running service).

func Example() {
	ctx := context.Background()
	c := client.New(os.Getenv("MEMOCART_KEY"), client.WithBaseURL("http://127.0.0.1:8080"))

	cart, err := c.CreateCart(ctx, &client.CreateCartParams{
		Items:         []client.CartItemParams{{ProductURL: "https://www.amazon.com/dp/B08N5WRWNW", Quantity: 1}},
		ShipToCountry: "US",
	})
	if err != nil {
		log.Fatal(err)
	}
	order, err := c.CreateOrder(ctx, &client.CreateOrderParams{
		CartID:        cart.ID,
		CustomerEmail: "ada@example.com",
		PaymentAsset:  "USDC",
		ShippingAddress: client.ShippingAddress{Name: "Ada Lovelace", Line1: "1 Main St", City: "Springfield",
			Region: "IL", PostalCode: "62701", Country: "US"},
	})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == client.CodeInvalidAddress && apiErr.Field != nil {
		log.Fatalf("fix %s: %s (request %s)", *apiErr.Field, apiErr.Message, apiErr.RequestID)
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pay", order.PaymentAmount, order.PaymentAsset, "to", order.PaymentAddress, "memo", order.PaymentMemo)

	// Test mode: the sandbox pays it; then wait (polling every ~2 s).
	if _, err := c.CreateTestPayment(ctx, order.ID, nil); err != nil {
		log.Fatal(err)
	}
	done, err := c.WaitForOrderStatus(ctx, order.ID, client.OrderDelivered)
	if err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrFinalStatus): it ended cancelled or failed
	}
	fmt.Println(done.Number, done.Status)
}

func ExampleClient_Orders() {
	c := client.New(os.Getenv("MEMOCART_KEY"))
	for o, err := range c.Orders(context.Background(), &client.ListOrdersParams{Status: client.OrderPaid, Limit: 100}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(o.Number, o.Total, o.Currency)
	}
}

func ExampleClient_EventsAfter() {
	c := client.New(os.Getenv("MEMOCART_KEY"))
	last := "evt_T7cYw1QnLk0ZbR4pXv9sMf2D" // the newest event processed, kept by the receiver
	for e, err := range c.EventsAfter(context.Background(), last, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.ID, e.Type, e.Data.Order.Status)
		last = e.ID
	}
}

func ExampleParseEvent() {
	secret := os.Getenv("MEMOCART_WEBHOOK_SECRET") // whsec_…, from CreateWebhookEndpoint
	http.HandleFunc("POST /memocart/webhooks", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		e, err := client.ParseEvent(body, r.Header.Get(client.SignatureHeader), secret)
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent) // answer first; deduplicate by e.ID, then do the work
		log.Println(e.ID, e.Type, e.Data.Order.ID)
	})
}
