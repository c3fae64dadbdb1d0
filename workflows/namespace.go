package workflows

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"google.golang.org/grpc"
)

// SearchAttributes returns every custom search attribute the workflows of
// this package set, with its type. It is the one list whoever prepares a
// namespace registers (memocart dev, memocart cluster, docker-compose's
// setup job) and the one CheckNamespace verifies, so the three cannot drift
// from what the workflow code upserts.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	return map[string]enumspb.IndexedValueType{
		SearchAttrOrderNumber.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrOrderStatus.GetName():   enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrPaymentStatus.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrOrderMode.GetName():     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
		SearchAttrRefundStatus.GetName():  enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	}
}

// SearchAttributesSettle is how long whoever registers search attributes
// waits before a workflow may use them: the frontend lists them at once,
// but each of the server's services reloads its namespace registry only
// every system.namespaceCacheRefreshInterval (2 s by default), and until
// then fails an upsert of them as BadSearchAttributes.
const SearchAttributesSettle = 3 * time.Second

// SearchAttributeLister is the OperatorService call CheckNamespace makes;
// a client.Client's OperatorService() satisfies it.
type SearchAttributeLister interface {
	ListSearchAttributes(ctx context.Context, in *operatorservice.ListSearchAttributesRequest, opts ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error)
}

// CheckNamespace returns an error naming every search attribute of
// SearchAttributes that namespace lacks or has with another type. Without
// them the first order would start and then fail its workflow task on the
// first upsert, long after deploy; api and worker check at start instead,
// so a namespace prepared by hand fails loudly and says how to fix it.
func CheckNamespace(ctx context.Context, op SearchAttributeLister, namespace string) error {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing the search attributes of Temporal namespace %q: %w", namespace, err)
	}
	want := SearchAttributes()
	var missing, mistyped []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := resp.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case got != want[name]:
			mistyped = append(mistyped, fmt.Sprintf("%s is %s, want %s", name, typeName(got), typeName(want[name])))
		}
	}
	if len(missing) == 0 && len(mistyped) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Temporal namespace %q is not prepared for order workflows:", namespace)
	if len(missing) > 0 {
		fmt.Fprintf(&b, " missing search attribute(s) %s;", strings.Join(missing, ", "))
	}
	if len(mistyped) > 0 {
		fmt.Fprintf(&b, " wrong type: %s;", strings.Join(mistyped, "; "))
	}
	b.WriteString(" register each as Keyword, e.g.")
	for _, name := range missing {
		fmt.Fprintf(&b, " `temporal operator search-attribute create --namespace %s --name %s --type Keyword`", namespace, name)
	}
	if len(missing) == 0 {
		b.WriteString(" on a new namespace (a search attribute's type cannot be changed)")
	}
	return fmt.Errorf("%s", b.String())
}

// typeName is the name operators type in the CLI: Keyword, Text...
// (the API enums' String is that name).
func typeName(t enumspb.IndexedValueType) string { return t.String() }
