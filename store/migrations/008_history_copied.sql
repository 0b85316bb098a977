-- In a cluster, the newest message of the shared history stream whose
-- records this node has copied, committed with them: a message delivered
-- again (after a crash before its acknowledgement) is skipped. stream
-- names the stream and when it was created, so a recreated stream starts
-- from nothing; only the current stream's row is kept.
CREATE TABLE history_copied (
	stream TEXT PRIMARY KEY,
	seq    INTEGER NOT NULL
);
