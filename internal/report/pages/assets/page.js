// dcpsim results page: sortable tables, pipeline timelines and charts drawn
// from the data embedded in the page. No network, no library.
(function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var tip = document.getElementById('tooltip');

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }

  function showTip(ev, text) {
    tip.textContent = text;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 4) x = ev.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight - 4) y = ev.clientY - tip.offsetHeight - 10;
    tip.style.left = Math.max(x, 2) + 'px';
    tip.style.top = Math.max(y, 2) + 'px';
  }

  function hideTip() { tip.hidden = true; }

  function readData(box) {
    return JSON.parse(box.querySelector('script.data').textContent);
  }

  // Sortable tables: a click on a header sorts by its column, ascending
  // first, then descending; cells without a key sort last either way.
  function sortTable(table, col, th) {
    var text = th.classList.contains('text');
    var dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('aria-sort');
    th.setAttribute('aria-sort', dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    function keyOf(tr) {
      var td = tr.cells[col];
      return td && td.hasAttribute('data-key') ? td.getAttribute('data-key') : null;
    }
    rows.sort(function (a, b) {
      var ka = keyOf(a), kb = keyOf(b);
      if (ka === null || kb === null) return (ka === null ? 1 : 0) - (kb === null ? 1 : 0);
      var c = text ? ka.localeCompare(kb, undefined, { numeric: true }) : parseFloat(ka) - parseFloat(kb);
      return dir === 'ascending' ? c : -c;
    });
    rows.forEach(function (tr) { body.appendChild(tr); });
  }

  function initTable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      th.querySelector('button').addEventListener('click', function () { sortTable(table, col, th); });
    });
  }

  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + ' µs';
    return Math.round(ns) + ' ns';
  }

  // niceStep is a 1, 2 or 5 times a power of ten near span/n.
  function niceStep(span, n) {
    var raw = span / n;
    if (!(raw > 0)) return 1;
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / mag;
    return mag * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
  }

  var KINDS = ['forward', 'backward', 'grad sync', 'optimizer', 'planner stall'];

  // A timeline: a track per (stage, rank), an op per bar (class "op kN",
  // N its results.SliceKind), its exposed communication over its last
  // part, the idle gaps as PP bubbles or, right before the gradient sync,
  // the DP wait.
  function initTimeline(box) {
    var data = readData(box);
    var plot = box.querySelector('.plot');
    var labelW = 190, trackH = 16, gap = 4, top = 22, bottom = 6;
    var W = Math.max(plot.clientWidth || 1000, 480);
    var plotW = W - labelW - 12;
    var H = top + data.tracks.length * (trackH + gap) + bottom;
    var svg = el('svg', { class: 'tl', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H }, plot);
    var clipId = box.id + '-clip';
    el('rect', { x: labelW, y: 0, width: plotW, height: H }, el('clipPath', { id: clipId }, el('defs', {}, svg)));
    var labels = el('g', { class: 'labels' }, svg);
    var view = el('g', { class: 'view' }, el('g', { 'clip-path': 'url(#' + clipId + ')' }, svg));
    var axis = el('g', { class: 'axis', 'pointer-events': 'none' }, svg);
    var end = Math.max(data.end, 1);
    var px = plotW / end;
    function trackY(i) { return top + i * (trackH + gap); }
    data.tracks.forEach(function (label, i) {
      el('text', { x: labelW - 6, y: trackY(i) + trackH - 4, 'text-anchor': 'end' }, labels).textContent = label;
      el('rect', { class: 'track', x: 0, y: trackY(i), width: end * px, height: trackH }, view);
    });
    // Bubbles first, so that the ops draw over them.
    var bubbles = [];
    var ops = data.ops;
    var i = 0;
    while (i < ops.length) {
      var t = ops[i][0], cursor = 0;
      for (; i < ops.length && ops[i][0] === t; i++) {
        var op = ops[i];
        if (op[4] > cursor) bubbles.push([t, op[1] === 2 ? 'dp' : 'pp', cursor, op[4]]);
        cursor = Math.max(cursor, op[5]);
      }
      if (cursor < end) bubbles.push([t, 'pp', cursor, end]);
    }
    bubbles.forEach(function (b, j) {
      el('rect', { class: 'bubble ' + b[1], 'data-b': j, x: b[2] * px, y: trackY(b[0]) + 3, width: (b[3] - b[2]) * px, height: trackH - 6 }, view);
    });
    ops.forEach(function (op, j) {
      var y = trackY(op[0]);
      el('rect', { class: 'op k' + op[1], 'data-i': j, x: op[4] * px, y: y, width: (op[5] - op[4]) * px, height: trackH }, view);
      if (op[6] > 0) {
        el('rect', { class: 'comm', 'data-i': j, x: (op[5] - op[6]) * px, y: y + trackH - 5, width: op[6] * px, height: 5 }, view);
      }
    });
    box.setAttribute('data-bars', String(view.querySelectorAll('rect.op.k0, rect.op.k1').length));

    var k = 1, tx = 0;
    function clamp() {
      k = Math.min(Math.max(k, 1), 1e6);
      tx = Math.min(0, Math.max(tx, plotW - k * plotW));
    }
    function drawAxis() {
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      var t0 = -tx / k / px, t1 = (plotW - tx) / k / px;
      var step = niceStep(t1 - t0, 8);
      for (var t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
        var x = labelW + tx + k * t * px;
        el('line', { x1: x, x2: x, y1: top - 4, y2: H - bottom }, axis);
        el('text', { x: x + 2, y: top - 8 }, axis).textContent = fmtNs(t);
      }
    }
    function apply() {
      clamp();
      view.setAttribute('transform', 'translate(' + (labelW + tx) + ',0) scale(' + k + ',1)');
      drawAxis();
    }
    function svgX(ev) {
      var r = svg.getBoundingClientRect();
      return (ev.clientX - r.left) * (W / r.width);
    }
    function zoomAt(mx, f) {
      var x0 = (mx - labelW - tx) / k;
      k *= f;
      clamp();
      tx = mx - labelW - k * x0;
      apply();
    }
    svg.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      zoomAt(svgX(ev), ev.deltaY < 0 ? 1.25 : 0.8);
    }, { passive: false });
    var drag = null;
    svg.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, tx: tx }; ev.preventDefault(); });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      tx = drag.tx + (ev.clientX - drag.x) * (W / r.width);
      apply();
    });
    window.addEventListener('mouseup', function () { drag = null; });
    box.querySelectorAll('button[data-zoom]').forEach(function (b) {
      b.addEventListener('click', function () {
        var z = b.getAttribute('data-zoom');
        if (z === 'reset') { k = 1; tx = 0; apply(); return; }
        zoomAt(labelW + plotW / 2, z === 'in' ? 2 : 0.5);
      });
    });
    svg.addEventListener('mousemove', function (ev) {
      var tgt = ev.target;
      if (drag) return;
      if (tgt.hasAttribute('data-i')) {
        var op = ops[+tgt.getAttribute('data-i')];
        var what = KINDS[op[1]] || 'op';
        if (op[2] >= 0) what += ', microbatch ' + op[2] + ', chunk ' + op[3];
        var text = what + '\n' + data.tracks[op[0]] + '\nstart ' + fmtNs(op[4]) + ', ' + fmtNs(op[5] - op[4]);
        if (op[6] > 0) text += '\nexposed comm ' + fmtNs(op[6]) + ' (the last part)';
        showTip(ev, text);
      } else if (tgt.hasAttribute('data-b')) {
        var b = bubbles[+tgt.getAttribute('data-b')];
        showTip(ev, (b[1] === 'dp' ? 'DP wait (before the gradient sync)' : 'PP bubble (idle)') + '\n' + data.tracks[b[0]] +
          '\nfrom ' + fmtNs(b[2]) + ' for ' + fmtNs(b[3] - b[2]));
      } else {
        hideTip();
      }
    });
    svg.addEventListener('mouseleave', hideTip);
    apply();
  }

  // A chart: points in series, lines over them, horizontal rules.
  function initChart(box) {
    var d = readData(box);
    var plot = box.querySelector('.plot');
    var W = Math.max(plot.clientWidth || 900, 480), H = 420;
    var m = { l: 70, r: 200, t: 14, b: 46 };
    var svg = el('svg', { class: 'ch', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H }, plot);
    var xs = [], ys = [];
    d.series.concat(d.lines).forEach(function (s) { s.points.forEach(function (p) { xs.push(p.x); ys.push(p.y); }); });
    d.rules.forEach(function (r) { ys.push(r.y); });
    var fx = d.xLog ? function (x) { return Math.log2(Math.max(x, 1e-300)); } : function (x) { return x; };
    var xmin = Math.min.apply(null, xs.map(fx)), xmax = Math.max.apply(null, xs.map(fx));
    if (!isFinite(xmin)) { xmin = 0; xmax = 1; }
    var pad = (xmax - xmin) * 0.05 || 1;
    xmin -= pad; xmax += pad;
    var ymin = Math.min(0, Math.min.apply(null, ys)), ymax = Math.max.apply(null, ys);
    if (!isFinite(ymax) || ymax <= ymin) ymax = ymin + 1;
    ymax += (ymax - ymin) * 0.08;
    function sx(x) { return m.l + (fx(x) - xmin) / (xmax - xmin) * (W - m.l - m.r); }
    function sy(y) { return H - m.b - (y - ymin) / (ymax - ymin) * (H - m.t - m.b); }
    var grid = el('g', { class: 'grid' }, svg);
    var ystep = niceStep(ymax - ymin, 6);
    for (var y = Math.ceil(ymin / ystep) * ystep; y <= ymax; y += ystep) {
      el('line', { x1: m.l, x2: W - m.r, y1: sy(y), y2: sy(y) }, grid);
      el('text', { x: m.l - 6, y: sy(y) + 4, 'text-anchor': 'end' }, grid).textContent = +y.toPrecision(6);
    }
    var ticks = [];
    if (d.xLog) {
      for (var e = Math.ceil(xmin); e <= xmax; e++) ticks.push(Math.pow(2, e));
    } else {
      var xstep = niceStep(xmax - xmin, 8);
      for (var x = Math.ceil(xmin / xstep) * xstep; x <= xmax; x += xstep) ticks.push(x);
    }
    ticks.forEach(function (x) {
      el('line', { x1: sx(x), x2: sx(x), y1: m.t, y2: H - m.b }, grid);
      el('text', { x: sx(x), y: H - m.b + 16, 'text-anchor': 'middle' }, grid).textContent = +x.toPrecision(6);
    });
    el('text', { x: (m.l + W - m.r) / 2, y: H - 8, 'text-anchor': 'middle' }, svg).textContent = d.xLabel;
    el('text', { x: 14, y: (m.t + H - m.b) / 2, 'text-anchor': 'middle', transform: 'rotate(-90 14 ' + (m.t + H - m.b) / 2 + ')' }, svg).textContent = d.yLabel;
    var legendY = m.t + 10;
    function legend(color, name, dashed, dot) {
      if (dot) el('circle', { cx: W - m.r + 16, cy: legendY - 4, r: 4, fill: color }, svg);
      else el('line', { x1: W - m.r + 8, x2: W - m.r + 24, y1: legendY - 4, y2: legendY - 4, stroke: color, 'stroke-width': 2, 'stroke-dasharray': dashed ? '5 3' : '' }, svg);
      el('text', { x: W - m.r + 30, y: legendY }, svg).textContent = name;
      legendY += 16;
    }
    d.rules.forEach(function (r) {
      el('line', { x1: m.l, x2: W - m.r, y1: sy(r.y), y2: sy(r.y), stroke: r.color, 'stroke-width': 1.5, 'stroke-dasharray': '6 4' }, svg);
      el('text', { x: W - m.r - 4, y: sy(r.y) - 5, 'text-anchor': 'end', fill: r.color }, svg).textContent = r.label;
    });
    var pts = el('g', { class: 'points' }, svg);
    d.series.forEach(function (s, si) {
      s.points.forEach(function (p, pi) {
        el('circle', { class: 'pt', 'data-s': si, 'data-p': pi, cx: sx(p.x), cy: sy(p.y), r: 4, fill: s.color, 'fill-opacity': 0.6 }, pts);
      });
      legend(s.color, s.name, false, true);
    });
    d.lines.forEach(function (l) {
      el('polyline', { fill: 'none', stroke: l.color, 'stroke-width': 1.6, 'stroke-dasharray': l.dashed ? '5 3' : '', 'pointer-events': 'none',
        points: l.points.map(function (p) { return sx(p.x) + ',' + sy(p.y); }).join(' ') }, svg);
      legend(l.color, l.name, l.dashed, false);
    });
    svg.addEventListener('mousemove', function (ev) {
      var t = ev.target;
      if (t.classList && t.classList.contains('pt')) {
        showTip(ev, d.series[+t.getAttribute('data-s')].points[+t.getAttribute('data-p')].label);
      } else {
        hideTip();
      }
    });
    svg.addEventListener('mouseleave', hideTip);
    box.setAttribute('data-points', String(pts.childNodes.length));
  }

  // The Perfetto UI takes a trace by postMessage once it answers PING
  // (https://perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui);
  // a page opened from file:// cannot read the trace, so it says how else.
  function initPerfetto(btn) {
    btn.addEventListener('click', function () {
      var file = btn.getAttribute('data-trace');
      var status = btn.parentNode.querySelector('.status');
      var origin = 'https://ui.perfetto.dev';
      fetch(file).then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.arrayBuffer();
      }).then(function (buf) {
        var win = window.open(origin + '/#!/');
        if (!win) { status.textContent = 'the browser blocked the new window'; return; }
        var tries = 0;
        var timer = setInterval(function () {
          if (++tries > 300) { clearInterval(timer); status.textContent = 'the Perfetto UI did not answer'; return; }
          win.postMessage('PING', origin);
        }, 100);
        window.addEventListener('message', function onMessage(e) {
          if (e.origin !== origin || e.data !== 'PONG') return;
          clearInterval(timer);
          window.removeEventListener('message', onMessage);
          win.postMessage({ perfetto: { buffer: buf, title: file, fileName: file } }, origin);
          status.textContent = 'sent to the Perfetto UI';
        });
      }).catch(function () {
        status.textContent = 'this page cannot read ' + file + ' (a page opened from file:// cannot): drag the file into ui.perfetto.dev, or open the page through dcpsim serve';
      });
    });
  }

  function each(selector, init) {
    document.querySelectorAll(selector).forEach(function (e) {
      try {
        init(e);
      } catch (err) {
        console.error('dcpsim page: ' + selector + (e.id ? ' #' + e.id : '') + ': ' + err);
      }
    });
  }

  each('table.sortable', initTable);
  each('.timeline', initTimeline);
  each('.chart', initChart);
  each('button.perfetto', initPerfetto);
  document.documentElement.setAttribute('data-ready', 'true');
})();
