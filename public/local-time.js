// The console's times come from the server in UTC (<time datetime="…" data-local>). This
// shows them in the reader's own time zone, to the second and with the zone's name (one
// format on every page), on the first page and on every page the console shows after it. Only the text changes (the same text node), so hydration is unaffected;
// without this script the UTC text stays.
(function () {
  var format = new Intl.DateTimeFormat(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit',
    second: '2-digit', timeZoneName: 'short',
  });
  function show(root) {
    var times = root.querySelectorAll('time[data-local]:not([data-shown])');
    for (var i = 0; i < times.length; i++) {
      var el = times[i];
      var d = new Date(el.getAttribute('datetime'));
      var text = el.firstChild;
      if (isNaN(d.getTime()) || !text || text.nodeType !== 3) continue;
      text.nodeValue = format.format(d);
      el.setAttribute('data-shown', '');
    }
  }
  function start() {
    show(document);
    new MutationObserver(function () { show(document); })
      .observe(document.body, { childList: true, subtree: true, characterData: true });
  }
  // A form with a `data-zone-offset` field (the Audit filter) says the reader's offset from
  // UTC, in minutes, on the day it asks for (or today), as it is sent.
  document.addEventListener('submit', function (e) {
    var form = e.target;
    var zone = form.querySelector && form.querySelector('input[data-zone-offset]');
    if (!zone) return;
    var day = form.querySelector('input[name=day]');
    var m = day && /^(\d{4})-(\d{2})-(\d{2})$/.exec(day.value.trim());
    var at = m ? new Date(+m[1], +m[2] - 1, +m[3], 12) : new Date();
    zone.value = String(-at.getTimezoneOffset());
  }, true);
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
