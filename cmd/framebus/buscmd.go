package main

import (
	"cmp"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/framebus/framebus/actors"
	"github.com/framebus/framebus/bus"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/serving"
)

// busCommand runs one member of a cluster's bus and nothing else: an
// embedded NATS server with JetStream, no browser and no tabs. A cluster
// of three keeps the history on three replicas; two machines with
// browsers and a third without one is such a cluster.
func busCommand() command {
	return command{
		name:    "bus",
		summary: "run one member of a clustered bus (an embedded NATS server, no browser) until SIGINT or SIGTERM",
		group:   groupNode,
		details: `A member of the cluster the nodes' embedded servers form (serve --cluster):
it carries requests, frames, the history's replicas and the cluster's users,
so clients may connect to it as to any node's server, with the credentials
of any node (they are shared in the cluster) or of bus.users.
Prints one JSON line, {"ok":true,"bus":"nats://127.0.0.1:PORT","cluster":...,"name":...,"pid":...}.
It writes no state file: point clients at it with --bus and --creds.`,
		setup: func(fs *pflag.FlagSet) func(c *cli, args []string) error {
			d := defaultConfig()
			configFile := fs.String("config", "", "YAML configuration `file` (default $"+envConfig+", else "+defaultConfigHint()+" when it exists); flags override it; its bus section applies")
			fs.String("node", "", "the member's server `name`, unique in the cluster (node.name; default: the host name and a short random suffix)")
			fs.String("listen", d.Bus.Listen, "`host:port` of the client listener, loopback unless --allow-remote; port 0 picks a free port")
			fs.String("websocket", "", "`host:port` of a NATS-over-WebSocket listener too, loopback unless --allow-remote")
			fs.String("websocket-origins", "", "comma-separated `origins` of the web pages that may use --websocket; none: no web page")
			fs.String("cluster", "", "`host:port` where the other members route to this one (bus.cluster.listen); required")
			fs.String("routes", "", "comma-separated `URLs` of every cluster member's route listener, nats-route://host:port (bus.cluster.routes)")
			fs.String("cluster-secret-file", "", "`file` holding the password cluster routes log in with, the same on every member (bus.cluster.secretFile)")
			boolVarP(fs, new(bool), "allow-remote", "", "let --listen, --websocket and --cluster be addresses other machines reach (no TLS)")
			fs.String("prefix", d.Bus.Prefix, "subject `prefix`, the nodes'")
			fs.String("log-level", d.LogLevel, "log `level` on stderr: trace, debug, info, warn, error")
			store := fs.String("store", "", "`dir`ectory of this member's JetStream files (the history's replicas) and of the users it follows, kept over a restart; default: a temporary one, removed at stop")
			return func(c *cli, args []string) error {
				if len(args) > 0 {
					return usagef("bus: takes no arguments, got %q", args)
				}
				cfg, _, err := c.loadConfig(*configFile)
				if err != nil {
					return err
				}
				cfg.applyFlags(fs)
				if cfg.Bus.Cluster.Listen == "" {
					return usagef("bus: --cluster (bus.cluster.listen) is required: a bus member without a cluster carries nothing a node's own server does not")
				}
				return c.runBus(cfg, *store)
			}
		},
	}
}

// busState is what bus prints once its member is ready.
type busState struct {
	OK      bool   `json:"ok"`
	Bus     string `json:"bus"`
	Cluster string `json:"cluster"`
	Name    string `json:"name"`
	PID     int    `json:"pid"`
}

func (c *cli) runBus(cfg config, store string) error {
	log, err := newLogger(c.stderr, cfg.LogLevel)
	if err != nil {
		return err
	}
	if cfg.Node.Name != "" {
		if err := protocol.CheckNodeName(cfg.Node.Name); err != nil {
			return usagef("--node: %v", err)
		}
	}
	host, port, err := splitListen(cfg.Bus.Listen, cfg.Bus.AllowRemote)
	if err != nil {
		return err
	}
	cluster, err := cfg.clusterOptions()
	if err != nil {
		return err
	}
	var users []bus.User
	for _, u := range cfg.Bus.Users {
		users = append(users, bus.User{Name: u.Name, PasswordHash: u.Password, Role: u.Role})
	}
	if store == "" {
		// A member keeps file-backed replicas (a node's file history,
		// the sessions): it needs a directory even when nobody keeps it.
		if store, err = os.MkdirTemp("", "framebus-bus-"); err != nil {
			return protocol.Errorf(protocol.CodeInternal, "bus store: %v", err)
		}
		defer os.RemoveAll(store)
	} else if err := os.MkdirAll(store, 0o700); err != nil {
		return usagef("--store: %v", err)
	}
	b, err := bus.Start(bus.Options{
		Name: cmp.Or(cfg.Node.Name, actors.DefaultNodeName()), Host: host, Port: port, AllowRemote: cfg.Bus.AllowRemote,
		WebSocket: cfg.Bus.WebSocket, WebSocketOrigins: cfg.Bus.WebSocketOrigins,
		Prefix: cfg.Bus.Prefix, Users: users, Cluster: cluster, Logger: log,
		JetStream: &bus.JetStreamOptions{StoreDir: store},
	})
	if err != nil {
		return serving.StartError(c.ctx, err)
	}
	st := busState{OK: true, Bus: b.ClientURL(), Cluster: b.ClusterURL(), Name: b.Server().Name(), PID: os.Getpid()}
	c.printJSON(st)
	log.Info().Str("bus", st.Bus).Str("cluster", st.Cluster).Msg("bus member ready; stop it with Ctrl-C or SIGTERM")
	<-c.ctx.Done()
	start := time.Now()
	err = b.Close()
	log.Info().Dur("took", time.Since(start)).Msg("bus member stopped")
	return err
}
