use super::*;

#[test]
fn only_the_allow_list_survives() {
    let v = serde_json::json!({
        "ok": true, "stopReason": "done", "createdActionRequestIds": [1, 2],
        "traceId": "t1", "needsHuman": false, "cached": false,
        "data": {"version": 3, "prompt": "secret prompt", "nested": {"a": 1}, "text": "hi"},
        "_internal": {"x": 1}, "debug": "d", "prompt": "p", "error": {"message": "m"},
        "stack": "s", "provider": "openai", "model": "gpt", "requestId": "r",
    });
    let safe = SafeResponse::sanitize(&v);
    let json = serde_json::to_string(&safe).unwrap();
    assert_eq!(
        json,
        r#"{"ok":true,"stopReason":"done","createdActionRequestIds":[1,2],"traceId":"t1","needsHuman":false,"cached":false,"data":{"version":3}}"#
    );
}
