//! Helpers shared by the schema tests: turning a file this binary wrote back
//! into what an older binary would have left.

use rusqlite::Connection;

/// Back to the rows and ledger of version 7: every job row holds the digest
/// of its args (version 8 keeps it only on rows with a dedupe key).
pub fn back_to_v7(conn: &Connection) {
    let rows: Vec<(i64, String)> = {
        let mut stmt = conn
            .prepare("SELECT rowid, args FROM duraq_jobs WHERE args_digest = ''")
            .unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    for (rowid, args) in rows {
        let digest = duraq_core::driver::digest_hex("args", &serde_json::from_str(&args).unwrap());
        conn.execute(
            "UPDATE duraq_jobs SET args_digest = ?2 WHERE rowid = ?1",
            rusqlite::params![rowid, digest],
        )
        .unwrap();
    }
    conn.execute_batch("DELETE FROM duraq_migrations WHERE version = 8")
        .unwrap();
}
