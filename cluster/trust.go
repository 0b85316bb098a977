package cluster

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/xiaozhi-hub/hub"
)

// Who may connect as which device is the cluster's too: each trust
// decision (approval, revocation, identity binding, token generation) is
// kept in the state bucket (a.<id>) and applied on every node; the secret
// that signs device tokens is one for all nodes (kept in the bucket the
// first time a node joins); and an activation code, held by the node that
// issued it, can be approved on any node (a NATS request to all nodes).

// TrustStore is the OTA service's store (ota.Store).
type TrustStore interface {
	LoadTrust(ctx context.Context) ([]hub.Trust, error)
	Trust(ctx context.Context, deviceID string) (hub.Trust, error)
	SaveTrust(ctx context.Context, t hub.Trust) error
	RecordCheck(ctx context.Context, t hub.Trust) error
}

// TrustService is the OTA service as the cluster serves it to the other
// nodes (ota.Service).
type TrustService interface {
	ApplyTrust(ctx context.Context, t hub.Trust) error
	LocalPending() []hub.Activation
	ApproveLocal(ctx context.Context, code string, patch hub.DevicePatch) (hub.Activation, hub.Trust, error)
}

const (
	pendingSubject = "xzhub.ota.pending"
	approveSubject = "xzhub.ota.approve"
	secretKey      = "secret.device-token"
)

func trustKey(id string) string { return "a." + key(id) }

// decision is the shared part of a trust record.
type decision struct {
	DeviceID          string    `json:"deviceId"`
	ClientID          string    `json:"clientId,omitempty"`
	SerialNumber      string    `json:"serialNumber,omitempty"`
	Generation        int64     `json:"generation,omitempty"`
	Approved          time.Time `json:"approved,omitzero"`
	Revoked           time.Time `json:"revoked,omitzero"`
	Transport         string    `json:"transport,omitempty"`
	ActivationVersion int       `json:"activationVersion,omitempty"`
	ActivationHMAC    string    `json:"activationHmac,omitempty"`
}

func decisionOf(t hub.Trust) decision {
	return decision{DeviceID: t.DeviceID, ClientID: t.ClientID, SerialNumber: t.SerialNumber, Generation: t.Generation,
		Approved: t.Approved.UTC(), Revoked: t.Revoked.UTC(), Transport: t.Transport,
		ActivationVersion: t.ActivationVersion, ActivationHMAC: t.ActivationHMAC}
}

func (d decision) trust() hub.Trust {
	return hub.Trust{DeviceID: d.DeviceID, ClientID: d.ClientID, SerialNumber: d.SerialNumber, Generation: d.Generation,
		Approved: d.Approved, Revoked: d.Revoked, Transport: d.Transport,
		ActivationVersion: d.ActivationVersion, ActivationHMAC: d.ActivationHMAC}
}

// TrustStore wraps the OTA service's own store: decisions go to the
// shared state first.
func (n *Node) TrustStore(local TrustStore) TrustStore {
	n.trustLocal = local
	return &sharedTrust{TrustStore: local, n: n}
}

// seedTrust puts in the shared state the decisions only this node knew (a
// hub joining a cluster with devices of its own).
func (n *Node) seedTrust(ctx context.Context) error {
	if n.trustLocal == nil {
		return nil
	}
	recs, err := n.trustLocal.LoadTrust(ctx)
	if err != nil {
		return err
	}
	for _, t := range recs {
		n.mu.Lock()
		_, shared := n.seen[trustKey(t.DeviceID)]
		n.mu.Unlock()
		if shared {
			continue
		}
		b, _ := json.Marshal(decisionOf(t))
		if err := n.put(ctx, trustKey(t.DeviceID), b); err != nil {
			return err
		}
	}
	return nil
}

type sharedTrust struct {
	TrustStore
	n *Node
}

func (s *sharedTrust) SaveTrust(ctx context.Context, t hub.Trust) error {
	b, err := json.Marshal(decisionOf(t))
	if err != nil {
		return err
	}
	if err := s.n.put(ctx, trustKey(t.DeviceID), b); err != nil {
		return hub.Errorf(hub.EUNAVAILABLE, "the cluster's shared state did not take the trust decision on device %q: %v", t.DeviceID, err)
	}
	return s.TrustStore.SaveTrust(ctx, t)
}

// ShareSecret returns the device-token secret of the cluster: the one in
// the shared state, or, for the first node, its own (ota.Options.ShareSecret).
func (n *Node) ShareSecret(ctx context.Context, local []byte) ([]byte, error) {
	// Retried for a while, as Start's steps are: a node that starts while
	// JetStream elects a leader (a rolling restart) waits for it.
	var shared []byte
	err := retry(ctx, 30*time.Second, func() error {
		_, err := n.state.Create(ctx, secretKey, []byte(hex.EncodeToString(local)))
		if err == nil {
			shared = local
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		e, err := n.state.Get(ctx, secretKey)
		if err != nil {
			return err
		}
		shared, err = hex.DecodeString(string(e.Value()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("the cluster's device-token secret: %w", err)
	}
	if string(shared) != string(local) {
		n.log.Info("using the cluster's device-token secret instead of this node's own: tokens this node issued alone are not accepted any more (devices fetch new ones at their next boot)")
	}
	return shared, nil
}

// ServeTrust answers the other nodes' questions about activation codes
// this node issued, and applies their trust decisions. Call it before
// Start.
func (n *Node) ServeTrust(t TrustService) error {
	n.trust = t
	for subj, h := range map[string]nats.MsgHandler{pendingSubject: n.answerPending, approveSubject: n.answerApprove} {
		sub, err := n.nc.Subscribe(subj, h)
		if err != nil {
			return err
		}
		n.serviceSubs = append(n.serviceSubs, sub)
	}
	return nil
}

type pendingReply struct {
	Node        string           `json:"node"`
	Activations []hub.Activation `json:"activations"`
}

func (n *Node) answerPending(m *nats.Msg) {
	b, _ := json.Marshal(pendingReply{Node: n.name, Activations: n.trust.LocalPending()})
	m.Respond(b)
}

type approveRequest struct {
	Code  string          `json:"code"`
	Patch hub.DevicePatch `json:"patch"`
}

type approveReply struct {
	Activation hub.Activation `json:"activation"`
	Trust      hub.Trust      `json:"trust"`
	Error      *replyError    `json:"error,omitempty"`
}

// answerApprove approves a code if this node issued it; other nodes stay
// silent.
func (n *Node) answerApprove(m *nats.Msg) {
	var req approveRequest
	if json.Unmarshal(m.Data, &req) != nil {
		return
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, t, err := n.trust.ApproveLocal(ctx, req.Code, req.Patch)
		if hub.ErrorCode(err) == hub.ENOTFOUND && a.Code == "" {
			return // not this node's code (or already approved here)
		}
		out := approveReply{Activation: a, Trust: t}
		if err != nil {
			out.Error = toReplyError(err)
		}
		b, _ := json.Marshal(out)
		m.Respond(b)
	}()
}

// PeerPending lists the codes the other nodes issued (ota.Peers).
func (n *Node) PeerPending(ctx context.Context) []hub.Activation {
	var out []hub.Activation
	for _, b := range n.gather(ctx, pendingSubject, nil) {
		var r pendingReply
		if json.Unmarshal(b, &r) == nil && r.Node != n.name {
			out = append(out, r.Activations...)
		}
	}
	return out
}

// PeerApprove approves a code another node issued (ota.Peers).
func (n *Node) PeerApprove(ctx context.Context, code string, patch hub.DevicePatch) (hub.Activation, hub.Trust, error) {
	b, _ := json.Marshal(approveRequest{Code: code, Patch: patch})
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := n.nc.RequestWithContext(ctx, approveSubject, b)
	if err != nil {
		return hub.Activation{}, hub.Trust{}, hub.Errorf(hub.ENOTFOUND, "no device is waiting with code %q on any hub node: codes expire after a while (the device then shows a new one)", code)
	}
	var r approveReply
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return hub.Activation{}, hub.Trust{}, fmt.Errorf("approve %s on another node: %w", code, err)
	}
	if r.Error != nil {
		return r.Activation, r.Trust, &hub.Error{Code: r.Error.Code, Message: r.Error.Message}
	}
	return r.Activation, r.Trust, nil
}
