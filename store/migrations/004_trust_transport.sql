-- A person can keep a device on WebSocket when the hub offers MQTT
-- (hub.Trust.Transport): '' follows the hub's configuration.
ALTER TABLE device_trust ADD COLUMN transport TEXT NOT NULL DEFAULT '';
