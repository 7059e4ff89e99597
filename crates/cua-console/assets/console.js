'use strict';
(function () {
  const main = document.getElementById('main');
  const toastBox = document.getElementById('toast');
  let token = sessionStorage.getItem('cua-token') || '';
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  if (fragment.get('token')) {
    token = fragment.get('token');
    sessionStorage.setItem('cua-token', token);
    const next = (fragment.get('go') || '/queue').replace(/[^A-Za-z0-9/_.-]/g, '');
    history.replaceState(null, '', location.pathname + '#' + next);
  }
  let timer = null;
  let socket = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === 'onclick') node.addEventListener('click', value);
      else if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function toast(text) {
    toastBox.textContent = text;
    toastBox.style.display = 'block';
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => { toastBox.style.display = 'none'; }, 6000);
  }
  async function api(method, path, body) {
    const options = { method, headers: { 'X-Cua-Token': token } };
    if (body !== undefined) { options.headers['Content-Type'] = 'application/json'; options.body = JSON.stringify(body); }
    const response = await fetch(path, options);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error((data.error && data.error.message) || response.statusText);
      error.status = response.status;
      throw error;
    }
    return data;
  }
  async function blobUrl(path) {
    const response = await fetch(path, { headers: { 'X-Cua-Token': token } });
    if (!response.ok) throw new Error(response.statusText);
    return URL.createObjectURL(await response.blob());
  }
  function fileLink(run, file) {
    return el('a', { href: '#', onclick: async (event) => {
      event.preventDefault();
      try { window.open(await blobUrl('/api/runs/' + encodeURIComponent(run) + '/files/' + file.split('/').map(encodeURIComponent).join('/')), '_blank'); }
      catch (error) { toast('Could not open ' + file + ': ' + error.message); }
    } }, file);
  }
  function dl(pairs) {
    const list = el('dl');
    for (const [name, value] of pairs) {
      if (value === null || value === undefined || value === '') continue;
      list.appendChild(el('dt', {}, name));
      list.appendChild(el('dd', {}, typeof value === 'object' && value.nodeType ? value : String(value)));
    }
    return list;
  }
  function stop() {
    if (timer) { clearInterval(timer); timer = null; }
    if (socket) { socket.close(); socket = null; }
  }

  function askToken() {
    clear(main);
    const input = el('input', { type: 'password', 'aria-label': 'Access token', size: 60 });
    main.appendChild(el('section', { class: 'card' },
      el('h1', {}, 'Access token required'),
      el('p', {}, 'Open the console with the URL printed when it started, or paste its token.'),
      input,
      el('button', { class: 'primary', onclick: () => { token = input.value.trim(); sessionStorage.setItem('cua-token', token); route(); } }, 'Use token')));
  }

  async function whoami() {
    try {
      const state = await api('GET', '/api/state');
      document.getElementById('who').textContent = 'Signed in as ' + state.operator + (state.pending ? ' · ' + state.pending + ' waiting' : '');
      return state;
    } catch (error) {
      if (error.status === 401) { token = ''; sessionStorage.removeItem('cua-token'); }
      throw error;
    }
  }

  async function queue() {
    // Re-rendered only when something changed, so a button is never replaced under the
    // operator's pointer.
    let shown = '';
    const render = async () => {
      const cards = await api('GET', '/api/interventions');
      const state = await whoami();
      const others = state.sessions.filter((s) => s.mode === 'recording');
      const key = JSON.stringify([cards, others.map((s) => [s.id, s.label])]);
      if (key === shown) return;
      shown = key;
      clear(main);
      main.appendChild(el('h1', {}, 'Interventions'));
      if (cards.length === 0) main.appendChild(el('p', { class: 'muted' }, 'Nothing needs a human.'));
      for (const card of cards) {
        const box = el('article', { class: 'card', 'aria-label': 'Intervention ' + card.id });
        box.appendChild(el('h2', {}, 'Intervention ' + card.id + ' — ' + card.state));
        box.appendChild(dl([
          ['Capability', card.capability], ['Goal', card.goal], ['Stopped at', card.stopped_at],
          ['Failure', card.failure_code], ['Reason', card.reason], ['Operator', card.operator],
          ['Lease epoch', card.epoch], ['Session', card.live ? 'live' : 'gone (kept for the record)'],
          ['Human delta', card.human_delta],
        ]));
        if (card.screenshot_ref) {
          const img = el('img', { class: 'thumb', alt: 'Screenshot when the run stopped' });
          blobUrl('/api/runs/' + encodeURIComponent(card.run_id) + '/files/' + card.screenshot_ref).then((url) => { img.src = url; }).catch(() => {});
          box.appendChild(img);
        }
        const links = el('p', {}, el('a', { href: card.evidence }, 'Evidence'));
        if (card.snapshot_ref) { links.appendChild(document.createTextNode(' · snapshot: ')); links.appendChild(fileLink(card.run_id, card.snapshot_ref)); }
        box.appendChild(links);
        const claimable = (card.state === 'open' || card.state === 'abandoned') && card.live;
        if (claimable) {
          box.appendChild(el('button', { class: 'primary', onclick: async () => {
            try {
              const answer = await api('POST', '/api/interventions/' + encodeURIComponent(card.id) + '/claim?epoch=' + card.epoch);
              location.hash = '#/session/' + encodeURIComponent(answer.session_id);
            } catch (error) {
              toast(error.status === 409 ? 'Someone else took it: ' + error.message : 'Could not take control: ' + error.message);
              render().catch(() => {});
            }
          } }, 'Take control'));
        } else if (card.state === 'claimed' && card.live) {
          box.appendChild(el('a', { href: '#/session/' + encodeURIComponent(card.session_id) }, 'Open live session'));
        }
        main.appendChild(box);
      }
      for (const session of others) {
        main.appendChild(el('p', {}, el('a', { href: '#/session/' + encodeURIComponent(session.id) }, 'Recording session: ' + session.label)));
      }
    };
    await render();
    timer = setInterval(() => { render().catch(() => {}); }, 2000);
  }

  async function live(id) {
    clear(main);
    const title = el('h1', {}, 'Live session');
    const status = el('p', { role: 'status', 'aria-label': 'Session status' }, 'connecting…');
    const answerLine = el('p', { role: 'status', 'aria-label': 'Last action' }, '');
    const img = el('img', { id: 'live', alt: 'Live session', tabindex: 0, draggable: 'false' });
    const stage = el('div', { id: 'stage' }, img);
    const confirmBar = el('div', { class: 'bar', hidden: '' });
    const handBar = el('div', { class: 'bar' });
    const extractName = el('input', { 'aria-label': 'Output name', placeholder: 'output name', size: 20 });
    let extractMode = false;
    let confirmingHandBack = false;
    let barsShown = '';
    const recordBar = el('div', { class: 'bar', hidden: '' },
      el('button', { onclick: () => { extractMode = !extractMode; toast(extractMode ? 'Click the value to extract into "' + extractName.value + '"' : 'Extraction off'); } }, 'Extract…'),
      extractName,
      el('button', { class: 'primary', onclick: async () => {
        try { const done = await api('POST', '/api/sessions/' + encodeURIComponent(id) + '/finish'); toast('Recorded ' + done.steps + ' steps. ' + done.compile); }
        catch (error) { toast('Could not finish: ' + error.message); }
      } }, 'Finish recording'));
    main.appendChild(title);
    main.appendChild(status);
    main.appendChild(stage);
    main.appendChild(answerLine);
    main.appendChild(confirmBar);
    main.appendChild(handBar);
    main.appendChild(recordBar);
    let page = { width: 1280, height: 800 };

    const showAnswer = (answer) => {
      answerLine.textContent = answer.outcome + (answer.target ? ' · ' + answer.target : '') + (answer.message ? ' · ' + answer.message : '');
      refresh().catch(() => {});
    };
    const send = (gesture) => {
      if (socket && socket.readyState === 1) socket.send(JSON.stringify({ type: 'gesture', gesture }));
      else api('POST', '/api/sessions/' + encodeURIComponent(id) + '/gesture', gesture).then(showAnswer).catch((error) => toast(error.message));
    };
    // Map a point on the element to page CSS pixels, allowing for the letterbox that
    // object-fit: contain leaves around the frame.
    const toPage = (event) => {
      const rect = img.getBoundingClientRect();
      const natural = { width: img.naturalWidth || page.width, height: img.naturalHeight || page.height };
      const scale = Math.min(rect.width / natural.width, rect.height / natural.height);
      const drawn = { width: natural.width * scale, height: natural.height * scale };
      const left = (rect.width - drawn.width) / 2;
      const top = (rect.height - drawn.height) / 2;
      const fx = (event.clientX - rect.left - left) / drawn.width;
      const fy = (event.clientY - rect.top - top) / drawn.height;
      if (fx < 0 || fx > 1 || fy < 0 || fy > 1) return null;
      return { x: Math.round(fx * page.width * 10) / 10, y: Math.round(fy * page.height * 10) / 10 };
    };
    img.addEventListener('click', (event) => {
      img.focus();
      const point = toPage(event);
      if (!point) return;
      flushText();
      if (extractMode) { extractMode = false; send({ kind: 'extract', x: point.x, y: point.y, into: extractName.value.trim() }); }
      else send({ kind: 'click', x: point.x, y: point.y });
    });
    let buffer = '';
    let bufferTimer = null;
    const flushText = () => {
      if (bufferTimer) { clearTimeout(bufferTimer); bufferTimer = null; }
      if (buffer) { const text = buffer; buffer = ''; send({ kind: 'text', text }); }
    };
    const named = ['Enter', 'Tab', 'Backspace', 'Delete', 'Escape', 'ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'];
    img.addEventListener('keydown', (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey) {
        if (event.key.length === 1 || named.includes(event.key)) {
          event.preventDefault();
          flushText();
          const mods = (event.ctrlKey ? 'Control+' : '') + (event.altKey ? 'Alt+' : '') + (event.metaKey ? 'Meta+' : '') + (event.shiftKey ? 'Shift+' : '');
          send({ kind: 'key', key: mods + event.key });
        }
        return;
      }
      if (event.key.length === 1) {
        event.preventDefault();
        buffer += event.key;
        if (bufferTimer) clearTimeout(bufferTimer);
        bufferTimer = setTimeout(flushText, 300);
      } else if (named.includes(event.key)) {
        event.preventDefault();
        flushText();
        send({ kind: 'key', key: (event.shiftKey ? 'Shift+' : '') + event.key });
      }
    });

    const refresh = async () => {
      const state = await whoami();
      const session = state.sessions.find((s) => s.id === id);
      if (!session) { status.textContent = 'This session is gone.'; return; }
      title.textContent = (session.mode === 'recording' ? 'Recording: ' : 'Live session: ') + session.label;
      const left = session.hold_seconds_left === null || session.hold_seconds_left === undefined ? null : session.hold_seconds_left;
      status.textContent = 'State ' + session.state + ' · epoch ' + session.epoch + ' · holder ' + session.holder +
        (session.operator ? ' (' + session.operator + ')' : '') + (left !== null ? ' · hold ' + left + ' s' : '') +
        (session.run_id ? ' · run ' + session.run_id : '') + ' · ' + session.human_actions + ' human action(s)';
      recordBar.hidden = session.mode !== 'recording';
      // The bars are rebuilt only when what they offer changes, so a button is never replaced
      // under the operator's pointer.
      const key = JSON.stringify([session.pending_confirmation, session.state, session.operator, session.intervention, session.mode, state.operator, confirmingHandBack]);
      if (key === barsShown) return;
      barsShown = key;
      clear(confirmBar);
      if (session.pending_confirmation) {
        confirmBar.hidden = false;
        confirmBar.appendChild(el('strong', {}, 'Irreversible: ' + session.pending_confirmation + ' needs your explicit confirmation. '));
        confirmBar.appendChild(el('button', { class: 'danger', onclick: async () => {
          try { showAnswer(await api('POST', '/api/sessions/' + encodeURIComponent(id) + '/confirm')); }
          catch (error) { toast('Not confirmed: ' + error.message); refresh().catch(() => {}); }
        } }, 'Confirm'));
        confirmBar.appendChild(el('button', { onclick: async () => { await api('POST', '/api/sessions/' + encodeURIComponent(id) + '/cancel').catch(() => {}); refresh().catch(() => {}); } }, 'Cancel'));
      } else {
        confirmBar.hidden = true;
      }
      clear(handBar);
      if (session.mode === 'supervised' && session.state === 'human_control' && session.operator === state.operator) {
        if (confirmingHandBack) {
          handBar.appendChild(el('span', {}, 'Hand the session back to automation? '));
          handBar.appendChild(el('button', { class: 'primary', onclick: async () => {
            confirmingHandBack = false;
            try {
              const released = await api('POST', '/api/sessions/' + encodeURIComponent(id) + '/release');
              toast('Handed back at epoch ' + released.epoch + ' · ' + released.human_delta);
            } catch (error) { toast('Could not hand back: ' + error.message); }
            refresh().catch(() => {});
          } }, 'Yes, hand back'));
          handBar.appendChild(el('button', { onclick: () => { confirmingHandBack = false; refresh().catch(() => {}); } }, 'Keep control'));
        } else {
          handBar.appendChild(el('button', { class: 'primary', onclick: () => { confirmingHandBack = true; refresh().catch(() => {}); } }, 'Hand back'));
        }
      } else if (session.mode === 'supervised' && session.intervention === null) {
        confirmingHandBack = false;
        handBar.appendChild(el('span', { class: 'muted' }, 'Automation holds the session; you are watching.'));
      }
    };
    await refresh();
    timer = setInterval(() => { refresh().catch(() => {}); }, 1000);

    socket = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws/sessions/' + encodeURIComponent(id), ['cua-console', 'cua-token.' + token]);
    let frames = 0;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(event.data);
      if (message.type === 'frame') {
        page = { width: message.page_width, height: message.page_height };
        img.src = 'data:image/jpeg;base64,' + message.jpeg;
        frames += 1;
        img.setAttribute('data-frames', String(frames));
      } else if (message.type === 'answer') {
        showAnswer(message.answer);
      } else if (message.type === 'error') {
        answerLine.textContent = 'refused · ' + message.message;
        refresh().catch(() => {});
      }
    });
    socket.addEventListener('close', () => { status.textContent += ' · live view disconnected'; });
  }

  async function runs() {
    const rows = await api('GET', '/api/runs');
    clear(main);
    main.appendChild(el('h1', {}, 'Runs'));
    const table = el('table', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Kind'), el('th', {}, 'Capability'), el('th', {}, 'Status'), el('th', {}, 'Started'), el('th', {}, 'Events')));
    for (const row of rows) {
      table.appendChild(el('tr', {},
        el('td', {}, el('a', { href: '#/runs/' + encodeURIComponent(row.run_id), 'data-run': row.run_id }, row.run_id)),
        el('td', {}, row.kind || ''), el('td', {}, row.capability || ''), el('td', {}, row.status || ''),
        el('td', {}, row.started_at || ''), el('td', {}, row.events)));
    }
    main.appendChild(table);
  }

  async function run(id) {
    const path = '/api/runs/' + encodeURIComponent(id);
    const [detail, shown] = await Promise.all([api('GET', path), api('GET', path + '/show')]);
    clear(main);
    const view = el('div', { class: 'cua-show' });
    main.appendChild(view);
    window.cuaShow(view, shown);
    main.appendChild(el('p', {}, el('button', { onclick: async () => {
      try {
        const url = await blobUrl(path + '/show.html');
        const link = el('a', { href: url, download: detail.run_id + '.html' });
        document.body.appendChild(link);
        link.click();
        link.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60000);
      } catch (error) { toast('Could not save the page: ' + error.message); }
    } }, 'Save as one page')));
    const files = el('ul', { 'aria-label': 'Evidence files' });
    for (const file of detail.files) files.appendChild(el('li', {}, fileLink(detail.run_id, file)));
    main.appendChild(el('h2', {}, 'Evidence files'));
    main.appendChild(files);
    if (detail.interventions.length) {
      main.appendChild(el('h2', {}, 'Interventions'));
      for (const card of detail.interventions) main.appendChild(el('pre', {}, JSON.stringify(card, null, 2)));
    }
  }

  async function capabilities() {
    const rows = await api('GET', '/api/capabilities');
    clear(main);
    main.appendChild(el('h1', {}, 'Capabilities'));
    const table = el('table', {}, el('tr', {}, el('th', {}, 'Capability'), el('th', {}, 'Title'), el('th', {}, 'Integrity'), el('th', {}, 'Approval'), el('th', {}, 'Max risk'), el('th', {}, 'Inputs → outputs')));
    for (const row of rows) {
      table.appendChild(el('tr', {}, el('td', {}, row.reference), el('td', {}, row.title), el('td', {}, row.integrity + (row.content_hash ? ' ' + row.content_hash : '')),
        el('td', {}, row.approval), el('td', {}, row.max_risk), el('td', {}, row.inputs.join(', ') + ' → ' + row.outputs.join(', '))));
    }
    main.appendChild(table);
  }

  async function settings() {
    const values = await api('GET', '/api/settings');
    clear(main);
    main.appendChild(el('h1', {}, 'Settings (read-only)'));
    main.appendChild(el('p', { class: 'muted' }, 'The console changes no setting. Edit the policy file and restart to change these.'));
    main.appendChild(el('pre', {}, JSON.stringify(values, null, 2)));
  }

  async function route() {
    stop();
    if (!token) { askToken(); return; }
    const hash = location.hash || '#/queue';
    const parts = hash.replace(/^#\//, '').split('/').map(decodeURIComponent);
    try {
      if (parts[0] === 'session' && parts[1]) await live(parts[1]);
      else if (parts[0] === 'runs' && parts[1]) await run(parts[1]);
      else if (parts[0] === 'runs') await runs();
      else if (parts[0] === 'capabilities') await capabilities();
      else if (parts[0] === 'settings') await settings();
      else await queue();
    } catch (error) {
      if (error.status === 401) { askToken(); return; }
      clear(main);
      main.appendChild(el('p', { role: 'alert' }, 'Error: ' + error.message));
    }
  }
  window.addEventListener('hashchange', route);
  route();
})();
