-- The hashes of the refresh tokens a grant issued before its current one
-- (32-byte SHA-256 hashes one after another, a bounded number): one that
-- comes back means the grant's tokens leaked, and the grant is revoked
-- (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2).
ALTER TABLE oauth_grants ADD COLUMN rotated BLOB;
