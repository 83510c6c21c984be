// The service's entry. It takes the stop signals before anything else loads: loading the service's
// modules takes a tenth of a second or more, and a signal meanwhile would end the process by the
// signal (status 143) rather than end the start with status 0, as a stop before the service listens does.
let onStopSignal = (_signal: NodeJS.Signals): void => process.exit(0);
// `on`, not `once`: a second signal must not kill the process mid-stop. It comes routinely: Ctrl-C
// reaches npm and the service alike, and npm passes its own signal on to the service. SIGHUP is a
// closed terminal: the service stops as it would for Ctrl-C.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => onStopSignal(signal));

const { serve } = await import('./service.js');
await serve((handler) => {
  onStopSignal = handler;
});
