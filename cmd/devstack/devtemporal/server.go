package devtemporal

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const (
	// clusterName names the single cluster. It is persisted in the database
	// on first start, so it must never change.
	clusterName = "active"
	// storeName is the persistence store both the main and the visibility
	// stores point at: one SQLite database holds everything.
	storeName = "sqlite-default"
	// dbFile is the SQLite file name inside Options.DataDir.
	dbFile = "temporal.db"
)

// memDBSeq makes in-memory database names unique within the process. The
// SQLite plugin pools connections by DSN for the life of the process, so a
// reused name would hand a new server the previous server's data.
var memDBSeq atomic.Int64

// prepareSQLite returns the SQL config for dataDir, creating the schema on
// first use, and makes sure the namespace exists. A new namespace is
// written with its search attributes, so every service's namespace
// registry loads them with it and the first workflow can use them.
func prepareSQLite(dataDir, namespace string, attrs map[string]enumspb.IndexedValueType) (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if dataDir == "" {
		// mode=memory makes the plugin create the schema itself.
		conf.DatabaseName = fmt.Sprintf("devtemporal-%d-%d", os.Getpid(), memDBSeq.Add(1))
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	} else {
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, fmt.Errorf("devtemporal: creating data dir: %w", err)
		}
		// An absolute path keeps the DSN, and so the plugin's pooled
		// connection, the same for every spelling of the same directory.
		path, err := filepath.Abs(filepath.Join(dataDir, dbFile))
		if err != nil {
			return nil, fmt.Errorf("devtemporal: resolving data dir: %w", err)
		}
		conf.DatabaseName = path
		// Keys the plugin does not know as URI parameters become pragmas.
		// WAL lets readers (visibility queries, the UI) proceed during
		// writes and survives a killed process; synchronous=NORMAL is the
		// safe pairing with WAL and avoids an fsync per commit; the busy
		// timeout covers a second process (say, the sqlite3 shell) holding
		// the lock briefly.
		conf.ConnectAttributes = map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			"busy_timeout": "5000",
		}
		if err := setupSchemaIfNew(conf, path); err != nil {
			return nil, err
		}
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, namespace, false, attrs)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: namespace %q: %w", namespace, err)
	}
	// A no-op when the namespace exists, so a restart keeps its settings.
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return nil, fmt.Errorf("devtemporal: creating namespace %q: %w", namespace, err)
	}
	return conf, nil
}

// setupSchemaIfNew creates the schema when the database file does not
// exist yet. A file that exists is assumed to hold the schema: this package
// creates the file and the schema in one step and deletes the file if that
// step fails.
func setupSchemaIfNew(conf *config.SQL, path string) error {
	_, err := os.Stat(path)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("devtemporal: checking database file: %w", err)
	}
	if err := sqliteschema.SetupSchema(conf); err != nil {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(path + suffix)
		}
		return fmt.Errorf("devtemporal: creating schema in %s: %w", path, err)
	}
	return nil
}

// dynamicConfig is what `temporal server start-dev` sets for a snappy
// single-node server, minus the Nexus callback settings memocart does not
// use.
func dynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		// The default sizes the mutable-state cache for a production host.
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key(): 8096,
		// The UI and polling tests issue many list/count calls per second;
		// the default of 10 makes them fail with resource-exhausted.
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
	}
}

// newTemporalServer builds (but does not start) the server.
func newTemporalServer(o Options, p ports, sqlConf *config.SQL, logger serverLogger) (temporal.Server, error) {
	frontend := net.JoinHostPort(p.dialHost, strconv.Itoa(p.frontendGRPC))
	frontendHTTP := net.JoinHostPort(p.dialHost, strconv.Itoa(p.frontendHTTP))

	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = internalHost
	conf.Persistence.DefaultStore = storeName
	conf.Persistence.VisibilityStore = storeName
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				// Ports change between runs in tests; the server updates the
				// persisted addresses from here on every start. The cluster
				// ID is left empty: the server generates one on first start
				// and keeps the persisted one after that.
				RPCAddress:  frontend,
				HTTPAddress: frontendHTTP,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = map[string]config.Service{
		string(primitives.FrontendService): rpcService(p.host, p.frontendGRPC, p.frontendHTTP),
		string(primitives.HistoryService):  rpcService(internalHost, p.history, 0),
		string(primitives.MatchingService): rpcService(internalHost, p.matching, 0),
		string(primitives.WorkerService):   rpcService(internalHost, p.worker, 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	// The worker service (schedules, batch jobs) is a client of the
	// frontend like any other.
	conf.PublicClient.HostPort = frontend

	internal := func(port int) static.Hosts {
		return static.SingleLocalHost(net.JoinHostPort(internalHost, strconv.Itoa(port)))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		// Static hosts instead of the gossip ring: one process, known
		// addresses, no membership ports and no join delay.
		temporal.WithStaticHosts(map[primitives.ServiceName]static.Hosts{
			primitives.FrontendService: static.SingleLocalHost(frontend),
			primitives.HistoryService:  internal(p.history),
			primitives.MatchingService: internal(p.matching),
			primitives.WorkerService:   internal(p.worker),
		}),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper {
			return authorization.NewNoopClaimMapper()
		}),
		temporal.WithDynamicConfigClient(dynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: building temporal server: %w", err)
	}
	return srv, nil
}

func rpcService(host string, grpcPort, httpPort int) config.Service {
	var s config.Service
	s.RPC.GRPCPort = grpcPort
	s.RPC.BindOnIP = host
	s.RPC.HTTPPort = httpPort
	return s
}

// newUIServer builds the UI server with its embedded assets. The UI server
// panics on configuration or asset errors; that becomes an error here.
func newUIServer(o Options, p ports) (ui *uiserver.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("devtemporal: building UI server: %v", r)
		}
	}()
	return uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                p.host,
		Port:                p.ui,
		TemporalGRPCAddress: net.JoinHostPort(p.dialHost, strconv.Itoa(p.frontendGRPC)),
		EnableUI:            true,
		DefaultNamespace:    o.Namespace,
		// Plain HTTP on localhost: a Secure cookie would never be sent back,
		// breaking the CSRF check on every write action.
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
	})), nil
}
