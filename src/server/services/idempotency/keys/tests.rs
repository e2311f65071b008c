use super::*;

#[test]
fn hmac_matches_rfc_4231() {
    // Test case 2.
    let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    assert_eq!(
        hex(&mac),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
    // Test case 6: a key longer than the block is hashed first.
    let mac = hmac_sha256(
        &[0xaa; 131],
        b"Test Using Larger Than Block-Size Key - Hash Key First",
    );
    assert_eq!(
        hex(&mac),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    );
}

#[test]
fn canonical_inputs_are_sorted_and_text_is_hashed() {
    let a = KeyInputs::new()
        .id("b", "2")
        .num("a", 1)
        .text("note", "  Hello   world ");
    let b = KeyInputs::new()
        .text("note", "Hello world")
        .num("a", 1)
        .id("b", "2");
    assert_eq!(a.canonical("t", "s"), b.canonical("t", "s"));
    let c = a.canonical("t", "s");
    assert!(!c.contains("Hello"), "{c}");
    assert!(
        c.starts_with(r#"{"inputs":{"a":1,"b":"2","note_sha256":""#),
        "{c}"
    );
    let one = Secret::new(b"x".repeat(32));
    let two = Secret::new(b"y".repeat(32));
    assert_ne!(key_hash(&one, "t", "s", &a), key_hash(&two, "t", "s", &a));
    assert_ne!(
        key_hash(&one, "t", "s", &a),
        key_hash(&one, "t", "other", &a)
    );
    assert_eq!(key_hash(&one, "t", "s", &a), key_hash(&one, "t", "s", &b));
}
