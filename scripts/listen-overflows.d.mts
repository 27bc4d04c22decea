export function listenOverflows(): number;
