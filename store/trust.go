package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xiaozhi-hub/hub"
)

// LoadTrust returns every device's trust record, without its system info,
// ordered by device id.
func (s *Store) LoadTrust(ctx context.Context) ([]hub.Trust, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+trustCols+`, NULL FROM device_trust ORDER BY device_id`)
	if err != nil {
		return nil, fmt.Errorf("load trust: %w", err)
	}
	defer rows.Close()
	var out []hub.Trust
	for rows.Next() {
		t, err := scanTrust(rows)
		if err != nil {
			return nil, fmt.Errorf("load trust: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load trust: %w", err)
	}
	return out, nil
}

// Trust returns one device's trust record with its system info, or an
// ENOTFOUND error.
func (s *Store) Trust(ctx context.Context, deviceID string) (hub.Trust, error) {
	row := s.readRow(ctx, `SELECT `+trustCols+`, system_info FROM device_trust WHERE device_id = ?`, deviceID)
	t, err := scanTrust(row)
	if errors.Is(err, sql.ErrNoRows) {
		return hub.Trust{}, hub.Errorf(hub.ENOTFOUND, "the hub has no trust record for device %q (it never made an OTA check here)", deviceID)
	}
	if err != nil {
		return hub.Trust{}, fmt.Errorf("trust of %s: %w", deviceID, err)
	}
	return t, nil
}

const trustCols = `device_id, client_id, generation, approved, revoked, activation_version,
	serial_number, activation_hmac, board, firmware, last_check, transport`

func scanTrust(sc interface{ Scan(...any) error }) (hub.Trust, error) {
	var t hub.Trust
	var approved, revoked, checked sql.NullInt64
	var info sql.NullString
	err := sc.Scan(&t.DeviceID, &t.ClientID, &t.Generation, &approved, &revoked, &t.ActivationVersion,
		&t.SerialNumber, &t.ActivationHMAC, &t.Board, &t.Firmware, &checked, &t.Transport, &info)
	t.Approved, t.Revoked, t.LastCheck = timeCol(approved), timeCol(revoked), timeCol(checked)
	t.SystemInfo = rawCol(info)
	return t, err
}

// SaveTrust writes the decision part of t (the identity the device is
// bound to: client id and serial number; generation, approval, revocation,
// activation evidence), creating the record if needed; what RecordCheck
// writes is left alone.
func (s *Store) SaveTrust(ctx context.Context, t hub.Trust) error {
	if err := checkID(t.DeviceID); err != nil {
		return err
	}
	approved, err := timeArg(t.Approved)
	if err != nil {
		return fmt.Errorf("save trust of %s: approved: %w", t.DeviceID, err)
	}
	revoked, err := timeArg(t.Revoked)
	if err != nil {
		return fmt.Errorf("save trust of %s: revoked: %w", t.DeviceID, err)
	}
	err = s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO device_trust (device_id, client_id, generation, approved, revoked,
			activation_version, serial_number, activation_hmac, transport) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (device_id) DO UPDATE SET client_id = excluded.client_id, generation = excluded.generation,
			approved = excluded.approved, revoked = excluded.revoked,
			activation_version = excluded.activation_version,
			serial_number = excluded.serial_number, activation_hmac = excluded.activation_hmac,
			transport = excluded.transport`,
			t.DeviceID, t.ClientID, t.Generation, approved, revoked, t.ActivationVersion, t.SerialNumber, t.ActivationHMAC, t.Transport)
		return err
	})
	if err != nil {
		return fmt.Errorf("save trust of %s: %w", t.DeviceID, err)
	}
	return nil
}

// RecordCheck writes what the device reported at an OTA check (board,
// firmware, system info, time; the client id only when none is bound),
// creating the record if needed; the decision part is left alone. Absent
// system info keeps the stored one.
func (s *Store) RecordCheck(ctx context.Context, t hub.Trust) error {
	if err := checkID(t.DeviceID); err != nil {
		return err
	}
	if len(t.SystemInfo) > 0 && !json.Valid(t.SystemInfo) {
		return hub.Errorf(hub.EINVALID, "record check of %s: system info is not valid JSON", t.DeviceID)
	}
	checked, err := timeArg(t.LastCheck)
	if err != nil {
		return fmt.Errorf("record check of %s: %w", t.DeviceID, err)
	}
	info := rawArg(t.SystemInfo)
	err = s.write(ctx, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO device_trust (device_id, client_id, board, firmware, system_info, last_check)
			VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (device_id) DO UPDATE SET
			client_id = CASE WHEN client_id = '' THEN excluded.client_id ELSE client_id END, board = excluded.board,
			firmware = excluded.firmware, system_info = coalesce(excluded.system_info, system_info),
			last_check = excluded.last_check`,
			t.DeviceID, t.ClientID, t.Board, t.Firmware, info, checked)
		return err
	})
	if err != nil {
		return fmt.Errorf("record check of %s: %w", t.DeviceID, err)
	}
	return nil
}

// DeleteUndecidedTrust removes a device's trust record if it holds no
// decision a person made or would miss: not approved, not revoked, no
// token generation of its own, no transport chosen. It reports whether a
// record was removed. Records of devices that never did anything useful go
// this way (ota's pruning); every other record stays.
func (s *Store) DeleteUndecidedTrust(ctx context.Context, deviceID string) (bool, error) {
	var n int64
	err := s.write(ctx, func(w *wtx) error {
		res, err := w.exec(`DELETE FROM device_trust WHERE device_id = ? AND approved IS NULL AND revoked IS NULL
			AND generation = 0 AND transport = ''`, deviceID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("delete trust of %s: %w", deviceID, err)
	}
	return n > 0, nil
}
