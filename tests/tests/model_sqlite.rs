//! The property suite: random operation sequences on `SqliteStore` and on the
//! `MemoryStore` reference must give identical answers and rows.

duraq_tests::model_suite!(sqlite_matches_reference, duraq_tests::SqliteFactory::new());
