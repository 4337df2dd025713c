//! The conformance suite against `SqliteStore`, one fresh database file per case.

use duraq_tests::SqliteFactory;

duraq_tests::store_suite!(sqlite, SqliteFactory::new());
