'use strict';
// The run viewer: renders the document `cua show` embeds (and the console's run page fetches)
// into `root`. Every text goes through textContent; nothing from the run is ever markup.
window.cuaShow = function cuaShow(root, doc) {
  const TREE_ROWS = 1500;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === 'onclick') node.addEventListener('click', value);
      else if (key === 'oninput') node.addEventListener('input', value);
      else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function text(value) {
    if (value === null || value === undefined) return '';
    if (typeof value === 'object') return JSON.stringify(value);
    return String(value);
  }
  function dl(pairs) {
    const list = el('dl');
    for (const [name, value] of pairs) {
      if (value === null || value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) continue;
      list.appendChild(el('dt', {}, name));
      list.appendChild(el('dd', {}, value instanceof Node ? value : text(value)));
    }
    return list;
  }
  function badge(label, tone) { return el('span', { class: 'badge ' + (tone || '') }, label); }
  function tone(status) {
    if (['success', 'confirmed', 'intact', 'granted'].includes(status)) return 'good';
    if (['failed', 'needs_human', 'contradicted', 'refused', 'denied', 'broken'].includes(status)) return 'bad';
    if (['business_outcome', 'unverifiable', 'in_doubt'].includes(status)) return 'warn';
    return '';
  }

  const record = doc.record || {};
  const result = record.result || null;
  const trace = doc.trace || [];
  const start = trace.find((line) => line.event === 'run_start') || {};
  const end = [...trace].reverse().find((line) => line.event === 'run_end') || null;
  const status = end ? end.status : 'unfinished';

  clear(root);
  root.appendChild(el('h1', {}, 'Run ' + doc.run_id));
  root.appendChild(dl([
    ['Kind', record.kind || start.kind],
    ['Capability', record.capability || start.capability],
    ['Goal', start.goal],
    ['Tenant', record.tenant || start.tenant],
    ['Content hash', record.capability_content_hash || start.content_hash],
    ['Status', el('span', { 'data-status': status }, status, end && end.failure_code ? badge(end.failure_code, 'bad') : null)],
    ['Reason', end && (end.reason || end.stop_reason)],
    ['Outcome', end && end.outcome],
    ['Outputs', end && Object.keys(end.outputs || {}).length ? end.outputs : null],
    ['Inputs', Object.keys(start.inputs || {}).length ? start.inputs : null],
    ['Duration', result && result.duration_ms !== undefined ? result.duration_ms + ' ms' : null],
    ['Model', record.model_name],
    ['Human actions', record.human_actions],
    ['Chain', el('span', { 'data-chain': doc.verification.intact ? 'intact' : 'broken' },
      badge(doc.verification.intact ? 'intact' : 'broken or unfinished', doc.verification.intact ? 'good' : 'bad'), ' ', doc.verification.summary)],
  ]));

  // Who held the session, epoch by epoch.
  const leases = trace.filter((line) => line.event === 'lease');
  root.appendChild(el('h2', {}, 'Lease'));
  if (leases.length === 0) {
    root.appendChild(el('p', { class: 'muted', 'data-lease': 'none' }, 'Automation held the session throughout (epoch ' + trace.reduce((most, line) => Math.max(most, line.lease_epoch || 0), 0) + ').'));
  } else {
    const table = el('table', { 'aria-label': 'Lease transitions' }, el('tr', {}, el('th', {}, '#'), el('th', {}, 'Transition'), el('th', {}, 'Holder'), el('th', {}, 'Epoch'), el('th', {}, 'Operator'), el('th', {}, 'What changed')));
    for (const line of leases) {
      table.appendChild(el('tr', {}, el('td', {}, line.seq), el('td', {}, line.transition), el('td', {}, line.holder), el('td', {}, line.lease_epoch), el('td', {}, line.operator || ''), el('td', {}, line.human_delta || '')));
    }
    root.appendChild(table);
  }

  // The steps and the selected one's detail.
  root.appendChild(el('h2', {}, 'Steps (' + doc.steps.length + ')'));
  const layout = el('div', { class: 'layout' });
  const list = el('ul', { class: 'steps', 'aria-label': 'Steps' });
  const detail = el('section', { 'aria-label': 'Step detail' });
  layout.appendChild(list);
  layout.appendChild(detail);
  root.appendChild(layout);
  const buttons = [];
  doc.steps.forEach((step, index) => {
    const state = step.refused ? 'refused' : (step.verdict || (step.dispatched ? 'dispatched' : 'not dispatched'));
    const button = el('button', { type: 'button', 'data-step': index, onclick: () => select(index) },
      el('strong', {}, (index + 1) + '. ' + (step.step || step.action || 'action')), ' ',
      el('span', { class: 'meta' }, [step.action, step.actor, 'epoch ' + step.epoch].filter(Boolean).join(' · ')),
      badge(state, tone(state)));
    buttons.push(button);
    list.appendChild(el('li', {}, button));
  });
  if (doc.steps.length === 0) detail.appendChild(el('p', { class: 'muted' }, 'No step was attempted.'));

  function eventCard(line) {
    const heading = el('h3', {}, line.event, ' ', el('span', { class: 'meta' }, '#' + line.seq + ' · ' + line.actor + ' · epoch ' + line.lease_epoch + ' · ' + line.at));
    let body;
    switch (line.event) {
      case 'resolve': {
        const drift = line.strategy && line.strategy_recorded && line.strategy !== line.strategy_recorded;
        heading.appendChild(badge(line.resolved ? 'resolved' : 'unresolved', line.resolved ? 'good' : 'bad'));
        if (drift) heading.appendChild(badge('drift', 'warn'));
        body = dl([
          ['Target', line.target],
          ['Rung used', line.strategy],
          ['Rung recorded', line.strategy_recorded],
          ['Drift', drift ? 'resolved by ' + line.strategy + ', recorded by ' + line.strategy_recorded : null],
          ['Node', line.node_id],
          ['Candidates considered', line.candidates_considered],
          ['Candidates', line.candidates],
          ['Ambiguity', line.ambiguity_score],
          ['Identity verified', line.identity_verified],
          ['Rungs tried', line.strategies_tried],
          ['Failure', line.failure_code],
          ['Reason', line.reason],
        ]);
        break;
      }
      case 'authorize':
        heading.appendChild(badge(line.granted ? 'granted' : 'denied', line.granted ? 'good' : 'bad'));
        heading.appendChild(badge(line.risk, line.risk === 'irreversible' ? 'warn' : ''));
        body = dl([['Decision', line.decision_id], ['Action', line.action_type], ['Risk', line.risk], ['Reason', line.reason], ['Signals', line.signals], ['Approval', line.approval], ['Denial', line.denial]]);
        break;
      case 'intent':
        body = dl([['Decision', line.decision_id], ['Idempotency key', line.idempotency_key], ['Row', line.row], ['Attempt', line.attempt], ['Risk', line.risk], ['Remedy', line.remedy]]);
        break;
      case 'dispatch':
        heading.appendChild(line.refused ? badge('refused', 'bad') : badge(line.ok ? 'ok' : 'failed', line.ok ? 'good' : 'bad'));
        body = dl([['Action', line.action_type], ['Node', line.node_id], ['Duration', line.duration_ms + ' ms'], ['Navigated', line.navigated ? 'yes' : null], ['HTTP status', line.http_status], ['Message', line.message], ['Refused because', line.reason], ['Expected epoch', line.expected_epoch]]);
        break;
      case 'effect':
        heading.appendChild(badge(line.verdict, tone(line.verdict)));
        body = dl([['Verdict', line.verdict], ['Reason', line.reason], ['Route', line.route], ['Not dispatched', line.undispatched]]);
        break;
      case 'wait':
        heading.appendChild(badge(line.satisfied ? 'satisfied' : 'timed out', line.satisfied ? 'good' : 'bad'));
        body = dl([['Condition', line.condition], ['Waited', line.waited_ms + ' ms'], ['Timeout', line.timeout_ms === undefined ? null : line.timeout_ms + ' ms']]);
        break;
      case 'verify':
        heading.appendChild(badge(line.holds ? 'holds' : 'does not hold', line.holds ? 'good' : 'bad'));
        body = dl([['Postcondition', line.postcondition], ['Observed', line.observed]]);
        break;
      case 'classify':
        body = dl([['Observation', line.observation], ['Matched', line.matched], ['Reason', line.reason]]);
        break;
      case 'recovery':
        body = dl([['Rule', line.rule], ['Attempt', line.attempt + ' of ' + line.max_attempts], ['Remedy', line.remedy], ['Capability', line.capability]]);
        break;
      case 'escalate':
        heading.appendChild(badge(line.status || 'escalated', 'bad'));
        body = dl([['Failure', line.failure_code], ['Reason', line.reason], ['Intervention', line.intervention]]);
        break;
      case 'lease':
        body = dl([['Transition', line.transition], ['Holder', line.holder], ['Operator', line.operator], ['Human actions', line.human_actions], ['What changed', line.human_delta]]);
        break;
      case 'llm_call':
        body = dl([['Model', line.model + (line.scripted ? ' (scripted)' : '')], ['Purpose', line.purpose], ['Tokens', line.prompt_tokens + ' in, ' + line.completion_tokens + ' out'], ['Reasoning', line.reasoning], ['Tool calls', line.tool_calls]]);
        break;
      case 'blocked_request':
        body = dl([['URL', line.url], ['Reason', line.reason], ['Navigation', line.navigation ? 'yes' : null]]);
        break;
      case 'observe':
        body = dl([['URL', line.url], ['Title', line.title], ['Nodes', line.node_count], ['Snapshot', line.snapshot_ref]]);
        break;
      default: {
        const rest = Object.assign({}, line);
        for (const key of ['seq', 'at', 'actor', 'lease_epoch', 'event']) delete rest[key];
        body = el('pre', {}, JSON.stringify(rest, null, 2));
      }
    }
    return el('div', { class: 'card', 'data-event': line.event }, heading, body);
  }

  function tree(name, targets) {
    const snapshot = Object.hasOwn(doc.snapshots, name) ? doc.snapshots[name] : null;
    const box = el('div', { 'data-snapshot': name });
    if (!snapshot) {
      box.appendChild(el('p', { class: 'muted' }, name + ': ' + ((Object.hasOwn(doc.left_out, name) && doc.left_out[name]) || 'not in the evidence')));
      return box;
    }
    const nodes = snapshot.nodes || [];
    box.appendChild(el('div', { class: 'meta' }, (snapshot.title || '') + ' · ' + (snapshot.url || '') + ' · ' + nodes.length + ' nodes'));
    const rows = el('div', { class: 'tree', role: 'tree', 'aria-label': 'Snapshot ' + name });
    const count = el('div', { class: 'meta', 'data-matches': '' });
    const search = el('input', { type: 'search', placeholder: 'Search roles, names and values', 'aria-label': 'Search snapshot ' + name, oninput: () => fill(search.value) });
    function line(node) {
      let label = '  '.repeat(Math.min(node.depth || 0, 40)) + node.role;
      if (node.name) label += ' "' + node.name + '"';
      if (node.value !== undefined && node.value !== null) label += ' = "' + node.value + '"';
      if (node.states && node.states.length) label += ' [' + node.states.join(', ') + ']';
      return label + '  ' + node.id;
    }
    function fill(query) {
      clear(rows);
      const needle = query.trim().toLowerCase();
      let shown = 0;
      let matched = 0;
      for (const node of nodes) {
        const label = line(node);
        if (needle && !label.toLowerCase().includes(needle)) continue;
        matched += 1;
        if (shown >= TREE_ROWS) continue;
        shown += 1;
        rows.appendChild(el('div', { role: 'treeitem', class: targets.includes(node.id) ? 'target' : null, 'data-node': node.id }, label));
      }
      count.textContent = (needle ? matched + ' of ' + nodes.length + ' nodes match' : nodes.length + ' nodes') + (shown < matched ? ' · showing the first ' + shown : '');
    }
    fill('');
    box.appendChild(search);
    box.appendChild(count);
    box.appendChild(rows);
    return box;
  }

  function select(index) {
    const step = doc.steps[index];
    buttons.forEach((button, at) => button.setAttribute('aria-current', at === index ? 'true' : 'false'));
    clear(detail);
    const lines = step.lines.map((at) => trace[at]);
    const targets = lines.filter((line) => line.event === 'resolve' && line.node_id).map((line) => line.node_id);
    detail.appendChild(el('h2', {}, 'Step ' + (index + 1) + (step.step ? ' · ' + step.step : '') + (step.action ? ' · ' + step.action : '')));
    detail.appendChild(dl([['Actor', step.actor], ['Lease epoch', step.epoch], ['Effect', step.verdict]]));
    for (const line of lines) detail.appendChild(eventCard(line));
    const screens = el('div', { class: 'screens' });
    screens.appendChild(el('div', {}, el('h3', {}, 'Before'), step.before ? tree(step.before, targets) : el('p', { class: 'muted' }, 'No snapshot before this step.')));
    screens.appendChild(el('div', {}, el('h3', {}, 'After'), step.after ? tree(step.after, targets) : el('p', { class: 'muted' }, 'No snapshot after this step.')));
    detail.appendChild(screens);
    for (const name of step.screenshots) {
      detail.appendChild(el('h3', {}, 'Screenshot ' + name));
      if (Object.hasOwn(doc.screenshots, name)) detail.appendChild(el('img', { class: 'shot', src: doc.screenshots[name], alt: 'Screenshot ' + name }));
      else detail.appendChild(el('p', { class: 'muted' }, (Object.hasOwn(doc.left_out, name) && doc.left_out[name]) || 'not in the evidence'));
    }
    if (location.protocol === 'file:') history.replaceState(null, '', '#step-' + (index + 1));
  }

  // The trace, whole, filterable by event name.
  root.appendChild(el('h2', {}, 'Trace (' + trace.length + ' events)'));
  const filter = el('input', { type: 'search', placeholder: 'Filter by event or text', 'aria-label': 'Filter the trace', oninput: () => fillTrace(filter.value) });
  const table = el('table', { 'aria-label': 'Trace' });
  function fillTrace(query) {
    clear(table);
    table.appendChild(el('tr', {}, el('th', {}, '#'), el('th', {}, 'Event'), el('th', {}, 'Actor'), el('th', {}, 'Epoch'), el('th', {}, 'Detail')));
    const needle = query.trim().toLowerCase();
    for (const line of trace) {
      const rest = Object.assign({}, line);
      for (const key of ['seq', 'at', 'actor', 'lease_epoch', 'event']) delete rest[key];
      const detailText = JSON.stringify(rest);
      if (needle && !(line.event + ' ' + detailText).toLowerCase().includes(needle)) continue;
      table.appendChild(el('tr', { 'data-seq': line.seq }, el('td', {}, line.seq), el('td', {}, line.event), el('td', {}, line.actor), el('td', {}, line.lease_epoch), el('td', {}, detailText)));
    }
  }
  fillTrace('');
  root.appendChild(filter);
  root.appendChild(table);

  // Every picture the run kept, in one place.
  const shots = Object.entries(doc.screenshots || {});
  if (shots.length) {
    root.appendChild(el('h2', {}, 'Screenshots (' + shots.length + ')'));
    for (const [name, url] of shots) {
      root.appendChild(el('figure', { 'data-screenshot': name }, el('img', { class: 'shot', src: url, alt: 'Screenshot ' + name }), el('figcaption', { class: 'meta' }, name)));
    }
  }

  const leftOut = Object.entries(doc.left_out || {});
  if (leftOut.length) {
    root.appendChild(el('h2', {}, 'Not in this page'));
    root.appendChild(dl(leftOut));
  }

  if (doc.steps.length) {
    const wanted = /^#step-(\d+)$/.exec(location.hash);
    const failed = doc.steps.findIndex((step) => step.refused || ['contradicted', 'unverifiable'].includes(step.verdict) || step.lines.some((at) => ['escalate'].includes(trace[at].event) || (trace[at].event === 'resolve' && !trace[at].resolved)));
    const first = wanted ? Math.min(Number(wanted[1]) - 1, doc.steps.length - 1) : (failed >= 0 ? failed : 0);
    select(Math.max(first, 0));
  }
};
