// Times in the reader's zone (src/ui/components/moment.rs); sent as is: every byte is in
// every page's first load.
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
  // The Audit filter's `data-zone-offset`: the offset from UTC, in minutes, on its day.
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
