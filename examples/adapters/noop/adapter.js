// Decides without Redis: every check is allowed at once. A run with it beside a library measures what
// the process boundary itself costs (JSON both ways, the event loop, the pipe).
'use strict';

const { serve } = require('../lib/protocol');

serve('noop', async () => ({
  library: 'noop',
  version: '1',
  client: `node ${process.versions.node}`,
  check: async () => ({ allowed: true }),
}));
