use super::*;

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_version_00_header_parses_into_its_fields() {
    let tp = TraceParent::parse(GOOD).unwrap();
    assert_eq!(tp.as_str(), GOOD);
    assert_eq!(tp.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(tp.parent_id(), "00f067aa0ba902b7");
    assert_eq!(tp.flags(), 1);
    assert!(tp.sampled());
    let unsampled = TraceParent::parse(&GOOD.replace("-01", "-00")).unwrap();
    assert!(!unsampled.sampled());
}

#[test]
fn a_later_version_is_read_as_version_00() {
    let later = GOOD.replacen("00-", "cc-", 1);
    assert_eq!(TraceParent::parse(&later).unwrap().as_str(), GOOD);
    let extended = format!("{later}-what-comes-later");
    assert_eq!(TraceParent::parse(&extended).unwrap().as_str(), GOOD);
}

#[test]
fn malformed_headers_are_invalid_trace_parent() {
    let bad = [
        "".to_owned(),
        "00".to_owned(),
        GOOD[..54].to_owned(),
        format!("{GOOD}-00"),
        format!("{GOOD}x"),
        GOOD.to_uppercase(),
        GOOD.replacen("00-", "ff-", 1),
        GOOD.replacen("00-", "0g-", 1),
        GOOD.replace('-', "_"),
        GOOD.replace(
            "4bf92f3577b34da6a3ce929d0e0e4736",
            "00000000000000000000000000000000",
        ),
        GOOD.replace("00f067aa0ba902b7", "0000000000000000"),
        GOOD.replacen("-01", "-1x", 1),
        format!(" {}", &GOOD[1..]),
        "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01".to_owned(),
        "00-4bf92f3577b34da6a3ce929d0e0e47-3600f067aa0ba902b7-01".to_owned(),
    ];
    for text in bad {
        let err = TraceParent::parse(&text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidTraceParent, "{text:?}");
    }
}

#[test]
fn parts_format_as_lower_case_hex_and_round_trip() {
    let tp = TraceParent::from_parts(
        0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
        0x00f0_67aa_0ba9_02b7,
        1,
    )
    .unwrap();
    assert_eq!(tp.as_str(), GOOD);
    assert_eq!(TraceParent::parse(tp.as_str()).unwrap(), tp);
    let tiny = TraceParent::from_parts(1, 2, 0).unwrap();
    assert_eq!(
        tiny.as_str(),
        "00-00000000000000000000000000000001-0000000000000002-00"
    );
    assert_eq!(TraceParent::from_parts(1, 0, 1), None);
}

#[test]
fn a_given_header_is_checked_and_no_span_means_none() {
    assert_eq!(
        for_new_job(Some(GOOD))
            .unwrap()
            .map(TraceParent::into_string),
        Some(GOOD.to_owned())
    );
    let err = for_new_job(Some("nope")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidTraceParent);
    // No span is entered here (and, with `otel`, no OpenTelemetry layer is
    // installed), so nothing is captured.
    assert_eq!(for_new_job(None).unwrap(), None);
}
