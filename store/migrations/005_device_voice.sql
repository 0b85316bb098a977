-- The speech synthesis voice a person chose for a device ('' : the hub's).
ALTER TABLE devices ADD COLUMN voice TEXT NOT NULL DEFAULT '';
