package api

import (
	"net/http"
	"slices"
)

// ClusterInfo is what a hub node knows of its cluster (Options.Cluster).
type ClusterInfo struct {
	Node  string   // this node's name
	Nodes []string // the nodes alive, this one included
	// NATS is the state of this node's NATS connection ("CONNECTED",
	// "RECONNECTING", …).
	NATS string
	// HistoryUnshared counts the records that never reached the shared
	// history.
	HistoryUnshared uint64
}

type clusterNodeJSON struct {
	Name          string `json:"name"`
	Self          bool   `json:"self"`
	DevicesOnline int    `json:"devicesOnline"`
}

type clusterJSON struct {
	Clustered       bool              `json:"clustered"`
	Node            string            `json:"node,omitempty"`
	NATS            string            `json:"nats,omitempty"`
	HistoryUnshared uint64            `json:"historyUnshared"`
	Nodes           []clusterNodeJSON `json:"nodes"`
}

func (s *Server) clusterRoutes() []route {
	return []route{{"/api/cluster", []methodHandler{{"GET", s.adminOnly("see the cluster", s.getCluster)}}}}
}

// getCluster answers which nodes are alive and how many devices each
// holds; a hub alone answers {"clustered":false}.
func (s *Server) getCluster(w http.ResponseWriter, r *http.Request) {
	out := clusterJSON{Nodes: []clusterNodeJSON{}}
	if s.cluster == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	c := s.cluster()
	out.Clustered, out.Node, out.NATS, out.HistoryUnshared = true, c.Node, c.NATS, c.HistoryUnshared
	held := map[string]int{}
	for _, d := range s.reg.Devices() {
		if d.Online {
			node := d.Node
			if node == "" {
				node = c.Node
			}
			held[node]++
		}
	}
	names := slices.Clone(c.Nodes)
	for node := range held { // a holder not seen alive (yet) is listed too
		if !slices.Contains(names, node) {
			names = append(names, node)
		}
	}
	if !slices.Contains(names, c.Node) {
		names = append(names, c.Node)
	}
	slices.Sort(names)
	for _, n := range names {
		out.Nodes = append(out.Nodes, clusterNodeJSON{Name: n, Self: n == c.Node, DevicesOnline: held[n]})
	}
	writeJSON(w, http.StatusOK, out)
}
